"""Provider rounds on one thread, played through the Python client, for the telemetry tests."""

from __future__ import annotations

from collections.abc import Sequence

from pioneer_grpc.client import AsyncClient, assistant_entry, user_entry
from pioneer_grpc.v1 import (
    common_pb2,
    history_pb2,
    history_service_pb2,
    prompt_compiler_service_pb2,
    prompt_pb2,
    provider_service_pb2,
    turn_service_pb2,
)

MODEL = "claude-sonnet-4-5"


def compile_input(extra_system: str) -> prompt_pb2.PromptCompileInput:
    return prompt_pb2.PromptCompileInput(profile=prompt_pb2.PROMPT_PROFILE_FULL, extra_system=extra_system)


class Rounds:
    def __init__(self, client: AsyncClient) -> None:
        self.client = client

    async def thread(self, thread_id: str, **config) -> None:
        config.setdefault("model", MODEL)
        await self.client.create_thread(
            history_service_pb2.CreateThreadRequest(
                thread_id=thread_id, config=history_pb2.ThreadConfig(**config)
            )
        )

    async def completed_turn(self, thread_id: str, turn_id: str, question: str, answer: str) -> None:
        entries = [user_entry(f"{turn_id}-u", question), assistant_entry(f"{turn_id}-a", answer)]
        for entry in entries:
            entry.turn_id = turn_id
        await self.client.append_entries(
            history_service_pb2.AppendEntriesRequest(thread_id=thread_id, entries=entries)
        )
        await self.client.complete_turn(
            history_service_pb2.CompleteTurnRequest(thread_id=thread_id, turn_id=turn_id)
        )

    async def tool_turn(self, thread_id: str, turn_id: str, result: str) -> None:
        """A completed turn: a question, one read_file call, its (long) result, an answer."""
        call = common_pb2.ToolCall(id=f"{turn_id}-call", name="read_file", arguments='{"path": "notes.md"}')
        entries = [
            user_entry(f"{turn_id}-u", "What do the notes say?"),
            history_pb2.ConversationEntry(
                entry_id=f"{turn_id}-a1", role=history_pb2.ENTRY_ROLE_ASSISTANT, tool_calls=[call]
            ),
            history_pb2.ConversationEntry(
                entry_id=f"{turn_id}-r",
                role=history_pb2.ENTRY_ROLE_TOOL,
                tool_call_id=call.id,
                name="read_file",
                content=result,
            ),
            assistant_entry(f"{turn_id}-a2", "They list the open tasks."),
        ]
        for entry in entries:
            entry.turn_id = turn_id
        await self.client.append_entries(
            history_service_pb2.AppendEntriesRequest(thread_id=thread_id, entries=entries)
        )
        await self.client.complete_turn(
            history_service_pb2.CompleteTurnRequest(thread_id=thread_id, turn_id=turn_id)
        )

    async def compile_on(self, thread_id: str, turn_id: str, extra_system: str) -> None:
        """A round without a history load: CompilePrompt recording the manifest on the turn."""
        await self.client.compile_prompt(
            prompt_compiler_service_pb2.CompilePromptRequest(
                input=compile_input(extra_system), thread_id=thread_id, turn_id=turn_id
            )
        )

    async def prepare(
        self,
        thread_id: str,
        turn_id: str,
        text: str,
        extra_system: str = "Date: 2026-11-30",
        metadata: Sequence[tuple[str, str]] = (),
    ) -> turn_service_pb2.PrepareTurnResponse:
        request = turn_service_pb2.PrepareTurnRequest(
            thread_id=thread_id,
            turn_id=turn_id,
            new_entries=[user_entry(f"{turn_id}-u", text)],
            compile_input=compile_input(extra_system),
            provider=provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES,
        )
        return await self.client.prepare_turn(request, metadata=metadata)
