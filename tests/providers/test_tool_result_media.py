"""Media and error marks in tool results, rendered as each provider takes them, every change noticed."""

from __future__ import annotations

import json

import pytest

from pioneer_grpc.providers import render
from pioneer_grpc.v1 import provider_service_pb2
from tests.providers.cases import PROVIDERS, build
from tests.providers.strict import STRICT

P = provider_service_pb2
NOTICES = {
    "openai-chat": [
        ("tool_result_media_moved", "chat_request.messages[2].content_parts[0].image"),
        ("tool_result_media_moved", "chat_request.messages[2].content_parts[1].file"),
        ("tool_error_not_marked", "chat_request.messages[3].is_error"),
        ("tool_call_id_rewritten", "chat_request.messages[6].tool_calls[0].id"),
        ("tool_result_media_moved", "chat_request.messages[7].content_parts[0].image"),
    ],
    "openai-responses": [
        ("tool_error_not_marked", "chat_request.messages[3].is_error"),
        ("tool_call_id_rewritten", "chat_request.messages[6].tool_calls[0].id"),
    ],
    "anthropic": [("tool_call_id_rewritten", "chat_request.messages[6].tool_calls[0].id")],
    "gemini": [("tool_error_not_marked", "chat_request.messages[3].is_error")],
}


@pytest.mark.parametrize("name", list(PROVIDERS))
def test_each_change_to_a_tool_result_is_noticed(name: str) -> None:
    provider = PROVIDERS[name]
    out = render(provider, build("tool_result_media", provider))  # type: ignore[arg-type]
    STRICT[provider](json.loads(out.body_json))
    assert [(n.code, n.field) for n in out.notices] == NOTICES[name]


def test_chat_completions_sends_tool_result_media_after_the_turns_results() -> None:
    provider = P.PROVIDER_OPENAI_CHAT_COMPLETIONS
    body = json.loads(render(provider, build("tool_result_media", provider)).body_json)
    roles = [m["role"] for m in body["messages"]]
    assert roles == [
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "user",
    ]
    moved = body["messages"][4]["content"]
    assert [p["type"] for p in moved] == ["text", "image_url", "file"]
    assert moved[0]["text"] == "Returned by tool call call_0:"


def test_anthropic_marks_the_error_and_keeps_media_inside_the_result() -> None:
    provider = P.PROVIDER_ANTHROPIC_MESSAGES
    body = json.loads(render(provider, build("tool_result_media", provider)).body_json)
    first, second = body["messages"][2]["content"]
    assert [b["type"] for b in first["content"]] == ["text", "image", "document"]
    assert "is_error" not in first
    assert second["is_error"] is True
