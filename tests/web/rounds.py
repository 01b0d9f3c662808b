"""PrepareTurn requests the web tests share."""

from __future__ import annotations

from pioneer_grpc.client import user_entry
from pioneer_grpc.v1 import prompt_pb2, provider_service_pb2, turn_service_pb2


def prepare_request(
    thread_id: str, turn_id: str, text: str, extra_system: str = "Date: 2026-12-01"
) -> turn_service_pb2.PrepareTurnRequest:
    return turn_service_pb2.PrepareTurnRequest(
        thread_id=thread_id,
        turn_id=turn_id,
        new_entries=[user_entry(f"{turn_id}-u", text)],
        compile_input=prompt_pb2.PromptCompileInput(
            profile=prompt_pb2.PROMPT_PROFILE_FULL, extra_system=extra_system
        ),
        provider=provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES,
    )
