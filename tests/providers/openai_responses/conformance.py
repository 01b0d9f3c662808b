"""OpenAI Responses: what the tests over every provider use (tests/providers/conformance.py)."""

from __future__ import annotations

from pioneer_grpc.v1 import provider_service_pb2
from tests.providers.conformance import (
    OPENAI_MODELS,
    Body,
    Conformance,
    openai_callable,
    openai_forced,
    openai_reasoning,
)
from tests.providers.openai_responses.rules import BROKEN, check_types, strict

P = provider_service_pb2


def _send(base_url: str, body: Body, model: str) -> None:
    import openai

    openai.OpenAI(base_url=f"{base_url}/v1", api_key="test", max_retries=0).responses.create(**body)


CONFORMANCE = Conformance(
    P.PROVIDER_OPENAI_RESPONSES,
    OPENAI_MODELS,
    strict,
    BROKEN,
    check_types,
    lambda body: [i["call_id"] for i in body["input"] if i.get("type") == "function_call"],
    lambda body: "temperature" in body,
    openai_reasoning,
    openai_callable,
    openai_forced,
    case_model="gpt-5",
    stable_block=lambda body: body["input"][0],
    sdk_send=_send,
    tool_result_media_notices=(
        ("tool_error_in_content", "chat_request.messages[3].is_error"),
        ("tool_call_id_rewritten", "chat_request.messages[6].tool_calls[0].id"),
    ),
)
