"""Anthropic Messages: what the tests over every provider use (tests/providers/conformance.py)."""

from __future__ import annotations

from pioneer_grpc.v1 import provider_service_pb2
from tests.providers.anthropic.rules import BROKEN, check_types, strict
from tests.providers.conformance import Body, Conformance, Model, is_on

P = provider_service_pb2


def _call_ids(body: Body) -> list[str]:
    return [
        b["id"]
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_use"
    ]


def _callable(body: Body) -> bool:
    return bool(body.get("tools")) and body.get("tool_choice", {}).get("type") != "none"


def _send(base_url: str, body: Body, model: str) -> None:
    import anthropic

    anthropic.Anthropic(base_url=base_url, api_key="test", max_retries=0).messages.create(**body)


CONFORMANCE = Conformance(
    P.PROVIDER_ANTHROPIC_MESSAGES,
    (
        Model("claude-3-haiku-20240307", False),
        Model("claude-sonnet-4-6", True),
        Model("claude-opus-4-1-20250805", True),
        Model("claude-next-9", True, notice="unknown_model"),
        Model("gpt-4.1-mini", False, notice="model_family_mismatch"),
    ),
    strict,
    BROKEN,
    check_types,
    _call_ids,
    lambda body: False,  # never sent: Anthropic's thinking takes none, and the renderer leaves it out
    lambda body, reasoning: (
        body.get("thinking", {}).get("type") == ("enabled" if is_on(reasoning) else "disabled")
    ),
    _callable,
    lambda body: body.get("tool_choice", {}).get("type") in ("any", "tool"),
    case_model="claude-sonnet-4-6",
    stable_block=lambda body: body["system"][0],
    sdk_send=_send,
    tool_result_media_notices=(("tool_call_id_rewritten", "chat_request.messages[6].tool_calls[0].id"),),
)
