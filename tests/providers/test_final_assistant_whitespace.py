"""A final assistant message loses the whitespace it ends with, where the provider refuses it.

Anthropic's Messages API and the Claude models behind Bedrock Converse answer 400 to
"final assistant content cannot end with trailing whitespace". The text sent of an
assistant message is its content followed by its text parts, so the whitespace is
trimmed from the last of those with text, with a notice on each field trimmed; an
assistant message before the last one, and a final user message, are sent as they are.
A round rendered after a kept prefix trims exactly as the render from scratch does.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.protobuf import json_format

from pioneer_grpc.providers import render
from pioneer_grpc.providers.prefix import render_prefix
from pioneer_grpc.providers.render import render_after
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.bedrock.rules import check_types
from tests.providers.bedrock.rules import strict as bedrock_strict
from tests.providers.conformance import conformances

P = provider_service_pb2
BEDROCK = P.PROVIDER_AMAZON_BEDROCK_CONVERSE
ANTHROPIC = P.PROVIDER_ANTHROPIC_MESSAGES
MODELS = {BEDROCK: "us.anthropic.claude-sonnet-4-5-20250929-v1:0", ANTHROPIC: "claude-sonnet-4-5"}
WHY = {
    BEDROCK: "Converse refuses a final assistant message ending in whitespace",
    ANTHROPIC: "Anthropic refuses a final assistant message ending in whitespace",
}
USER = {"role": "CHAT_ROLE_USER", "content": "Weather in Lisbon?"}


def _request(provider: int, *messages: dict[str, Any]) -> chat_pb2.ChatRequest:
    return json_format.ParseDict(
        {"model": MODELS[provider], "messages": list(messages)}, chat_pb2.ChatRequest()
    )


def _checked(provider: int, body_json: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(body_json)
    if provider == BEDROCK:
        bedrock_strict(body)
        check_types(body, MODELS[BEDROCK])
    else:
        conformances()[provider].strict(body)
    return body


def _sent(provider: int, request: chat_pb2.ChatRequest) -> tuple[Any, list[tuple[str, str, str]]]:
    """The last message's content as sent, and the notices (code, message, field)."""
    out = render(provider, request)
    body = _checked(provider, out.body_json)
    return body["messages"][-1]["content"], [(n.code, n.message, n.field) for n in out.notices]


def _text(provider: int, content: Any) -> Any:
    """`content` as the provider's body holds one text (Converse: a list of text blocks)."""
    return [{"text": content}] if provider == BEDROCK else content


def test_converse_trims_a_final_assistant_messages_content() -> None:
    request = _request(BEDROCK, USER, {"role": "CHAT_ROLE_ASSISTANT", "content": "  The forecast: \n"})
    content, notices = _sent(BEDROCK, request)
    assert content == [{"text": "  The forecast:"}]
    assert notices == [("trailing_whitespace_trimmed", WHY[BEDROCK], "chat_request.messages[1].content")]


@pytest.mark.parametrize("provider", [BEDROCK, ANTHROPIC], ids=["bedrock", "anthropic"])
def test_the_last_text_part_with_text_is_trimmed_not_the_content(provider: int) -> None:
    parts = [{"text": "Windy. "}, {"text": " \n"}]
    request = _request(
        provider, USER, {"role": "CHAT_ROLE_ASSISTANT", "content": "Sunny. ", "contentParts": parts}
    )
    content, notices = _sent(provider, request)
    assert content == _text(provider, "Sunny. \nWindy.")
    field = "chat_request.messages[1].content_parts"
    assert notices == [
        ("trailing_whitespace_trimmed", WHY[provider], f"{field}[1].text"),
        ("trailing_whitespace_trimmed", WHY[provider], f"{field}[0].text"),
    ]


def test_converse_trims_the_last_of_merged_assistant_messages() -> None:
    request = _request(
        BEDROCK,
        USER,
        {"role": "CHAT_ROLE_ASSISTANT", "content": "Sunny. "},
        {"role": "CHAT_ROLE_ASSISTANT", "content": "Windy.\n"},
    )
    content, notices = _sent(BEDROCK, request)
    assert content == [{"text": "Sunny. "}, {"text": "Windy."}]
    assert [(code, field) for code, _, field in notices] == [
        ("assistant_messages_merged", "chat_request.messages[2]"),
        ("trailing_whitespace_trimmed", "chat_request.messages[2].content"),
    ]


@pytest.mark.parametrize("provider", [BEDROCK, ANTHROPIC], ids=["bedrock", "anthropic"])
def test_an_earlier_assistant_message_and_a_final_user_message_keep_their_whitespace(provider: int) -> None:
    request = _request(
        provider,
        USER,
        {"role": "CHAT_ROLE_ASSISTANT", "content": "Sunny. "},
        {**USER, "content": "And Porto?  "},
    )
    out = render(provider, request)
    body = _checked(provider, out.body_json)
    assert body["messages"][1]["content"] == _text(provider, "Sunny. ")
    # A user turn is a list of blocks on both (Anthropic's breakpoints move without reshaping it).
    assert (
        body["messages"][2]["content"] == [{"text": "And Porto?  "}]
        if provider == BEDROCK
        else [{"type": "text", "text": "And Porto?  "}]
    )
    assert out.notices == ()


def test_a_round_after_a_kept_prefix_trims_as_the_render_from_scratch() -> None:
    """The prefix ends with tool results, joined with the round's user text; the round ends with a
    prefill. Only the prefill is trimmed: the prefix's assistant text keeps its whitespace."""
    call = {"id": "call_0", "name": "get_weather", "arguments": '{"city": "Lisbon"}'}
    history = [
        USER,
        {"role": "CHAT_ROLE_ASSISTANT", "content": "Looking it up. ", "toolCalls": [call]},
        {"role": "CHAT_ROLE_TOOL", "toolCallId": "call_0", "name": "get_weather", "content": "Sunny"},
    ]
    own = [{**USER, "content": "And Porto?"}, {"role": "CHAT_ROLE_ASSISTANT", "content": "Porto is \n"}]
    tool = {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}
    whole = json_format.ParseDict(
        {"model": MODELS[BEDROCK], "messages": [*history, *own], "tools": [tool]}, chat_pb2.ChatRequest()
    )
    prefix = render_prefix(BEDROCK, list(whole.messages[: len(history)]))
    assert prefix is not None
    tail = chat_pb2.ChatRequest()
    tail.CopyFrom(whole)
    del tail.messages[: len(history)]
    rendered_whole: list[chat_pb2.ChatRequest] = []

    def whole_request() -> chat_pb2.ChatRequest:
        rendered_whole.append(whole)
        return whole

    after = render_after(prefix, BEDROCK, tail, whole_request, source_bytes=whole.ByteSize()).encoded()
    assert not rendered_whole  # only the round's messages were rendered after the prefix
    assert after == render(BEDROCK, whole, capped_parts=True)
    messages = _checked(BEDROCK, after.body_json)["messages"]
    assert messages[1]["content"][0] == {"text": "Looking it up. "}
    assert [next(iter(b)) for b in messages[2]["content"]] == ["toolResult", "text"]  # joined
    assert messages[3]["content"] == [{"text": "Porto is"}]
    assert [(n.code, n.field) for n in after.notices] == [
        ("trailing_whitespace_trimmed", "chat_request.messages[4].content")
    ]
