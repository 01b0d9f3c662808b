"""Amazon Bedrock Converse: exact paths, blocks, notices and refusals of the renderer.

Each body here is also checked against the SDK's request types and Converse's
conversation rules (tests/providers/test_bedrock.py).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from google.protobuf import json_format

from pioneer_grpc.errors import FieldViolation, InvalidArgument
from pioneer_grpc.providers import render
from pioneer_grpc.providers.apis.bedrock import path_for, registry_model
from pioneer_grpc.providers.common import RUNTIME_CLOSE, RUNTIME_OPEN
from pioneer_grpc.providers.conversation import Notice
from pioneer_grpc.providers.prefix import render_prefix
from pioneer_grpc.providers.render import render_after
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.cases import PDF, PNG, build, dynamic_text, stable_text
from tests.providers.test_bedrock import bedrock_strict, check_types

BEDROCK = provider_service_pb2.PROVIDER_AMAZON_BEDROCK_CONVERSE
MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
PNG_B64 = base64.b64encode(PNG).decode()
PDF_B64 = base64.b64encode(PDF).decode()
WEATHER = {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}
CACHE_POINT = {"cachePoint": {"type": "default"}}


def _request(d: dict[str, Any]) -> chat_pb2.ChatRequest:
    return json_format.ParseDict({"model": MODEL, **d}, chat_pb2.ChatRequest())


def _user(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "CHAT_ROLE_USER", "content": text, **extra}


def _assistant(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "CHAT_ROLE_ASSISTANT", "content": text, **extra}


def _body(
    request: chat_pb2.ChatRequest, options: provider_service_pb2.RenderOptions | None = None, **kwargs: Any
) -> tuple[dict[str, Any], tuple[Notice, ...], int]:
    out = render(BEDROCK, request, options, **kwargs)
    body = json.loads(out.body_json)
    bedrock_strict(body)
    check_types(body, request.model)
    return body, out.notices, out.cache_breakpoints


def _refusal(request: chat_pb2.ChatRequest) -> list[FieldViolation]:
    with pytest.raises(InvalidArgument) as info:
        render(BEDROCK, request)
    return info.value.violations


def test_the_path_escapes_every_character_of_an_arn() -> None:
    arn = "arn:aws:bedrock:us-east-1:123456789012:custom-model/X7/abc"
    assert path_for(arn) == (
        "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Acustom-model%2FX7%2Fabc/converse"
    )


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("us.anthropic.claude-3-7-sonnet-20250219-v1:0", "claude-3-7-sonnet-20250219-v1:0"),
        (
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.anthropic.claude-sonnet-4-5-v1:0",
            "claude-sonnet-4-5-v1:0",
        ),
        (
            "arn:aws:bedrock:us-east-1:123456789012:imported-model/team/anthropic.claude-3-haiku-v1:0",
            "claude-3-haiku-v1:0",
        ),
    ],
)
def test_the_registry_name_is_the_model_id_without_profile_and_vendor(model: str, expected: str) -> None:
    assert registry_model(model) == expected


def test_the_system_halves_in_order_with_the_cache_point_between() -> None:
    request = build("plain_compiled", provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES)
    body, _, breakpoints = _body(request)
    # The summary (an opening system message) stays before the conversation; the dynamic half ends
    # the newest user turn, after its checkpoint.
    assert body["system"] == [
        {"text": stable_text()},
        CACHE_POINT,
        {"text": "Summary of earlier conversation:\nThe user plans a trip."},
    ]
    last = body["messages"][-1]["content"]
    assert last[-2] == CACHE_POINT
    assert last[-1] == {"text": f"{RUNTIME_OPEN}{dynamic_text()}{RUNTIME_CLOSE}"}
    assert body["inferenceConfig"] == {"maxTokens": 1024, "temperature": pytest.approx(0.2)}
    assert breakpoints == 3  # the stable half and both conversation anchors
    before = provider_service_pb2.RenderOptions(
        dynamic_context_placement=chat_pb2.DYNAMIC_CONTEXT_PLACEMENT_BEFORE_CONVERSATION
    )
    body, _, breakpoints = _body(request, before)
    assert body["system"] == [
        {"text": stable_text()},
        CACHE_POINT,
        # The leading system message joins the dynamic half.
        {"text": dynamic_text() + "\n\nSummary of earlier conversation:\nThe user plans a trip."},
    ]
    assert "runtime-context" not in json.dumps(body["messages"])


def test_the_models_minimum_in_tokens_decides_the_cache_points() -> None:
    # The compiled prompt of plain_compiled is over 1,024 tokens (claude-sonnet-4-6) and under
    # 4,096 (claude-haiku-4-5): a checkpoint after it for the one, none anywhere for the other.
    request = build("plain_compiled", provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES)
    request.model = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
    body, _, breakpoints = _body(request)
    assert CACHE_POINT not in body["system"]
    assert "cachePoint" not in json.dumps(body["messages"])
    assert breakpoints == 0
    request.model = "us.anthropic.claude-sonnet-4-6"
    body, _, breakpoints = _body(request)
    assert body["system"][1] == CACHE_POINT
    assert breakpoints == 3  # the stable half and both conversation anchors


def test_a_stable_half_of_exactly_the_minimum_length_gets_the_cache_point() -> None:
    request = build("plain_compiled", provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES)
    length = len(request.compiled_prompt.stable_system_text)
    at = provider_service_pb2.RenderOptions(anthropic_min_cache_chars=length)
    assert _body(request, at)[0]["system"][1] == CACHE_POINT
    over = provider_service_pb2.RenderOptions(anthropic_min_cache_chars=length + 1)
    assert CACHE_POINT not in _body(request, over)[0]["system"]


def test_reasoning_and_parallel_false_are_left_out_with_their_notices() -> None:
    request = _request(
        {
            "messages": [_user("hi")],
            "reasoning": {"effort": "REASONING_EFFORT_HIGH"},
            "tools": [WEATHER],
            "toolChoice": {"mode": "TOOL_CHOICE_MODE_REQUIRED"},
            "parallelToolCalls": False,
        }
    )
    body, notices, _ = _body(request)
    assert body["toolConfig"]["toolChoice"] == {"any": {}}
    assert notices == (
        Notice(
            "reasoning_not_sent",
            "Converse takes reasoning settings only through model-specific fields: they were not sent",
            "chat_request.reasoning",
        ),
        Notice(
            "parallel_tool_calls_unsupported",
            "Converse has no switch for parallel tool calls: parallel_tool_calls=false was not sent",
            "chat_request.parallel_tool_calls",
        ),
    )


def test_tool_choice_none_says_whether_the_tools_were_sent() -> None:
    _, notices, _ = _body(build("tools_none", provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES))
    assert notices == (
        Notice(
            "tool_choice_none_unsupported",
            "Converse has no tool choice none: the tools were not sent",
            "chat_request.tool_choice.mode",
        ),
    )
    request = build("tool_round_trip", provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES)
    request.model = MODEL
    request.tool_choice.mode = chat_pb2.TOOL_CHOICE_MODE_NONE
    body, notices, _ = _body(request)
    assert "toolChoice" not in body["toolConfig"]
    assert notices == (
        Notice(
            "tool_choice_none_unsupported",
            "Converse has no tool choice none: tools were sent with no choice",
            "chat_request.tool_choice.mode",
        ),
    )


def test_tools_called_in_the_history_are_declared_with_a_notice_naming_them() -> None:
    request = build("tool_round_trip", provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES)
    request.model = MODEL
    del request.tools[:]
    request.ClearField("tool_choice")
    _, notices, _ = _body(request)
    assert notices == (
        Notice(
            "tools_declared_for_history",
            "Converse refuses tool calls in the history without tools declared: "
            "get_weather, list_files declared (with no tool choice: Converse has no none)",
            "chat_request.tools",
        ),
    )


def test_tools_called_in_a_rendered_prefix_are_declared_by_name() -> None:
    whole = build("tool_round_trip", provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES)
    whole.model = MODEL
    del whole.tools[:]
    whole.ClearField("tool_choice")
    cut = len(whole.messages) - 1  # the tail is the user's last message
    prefix = render_prefix(BEDROCK, list(whole.messages[:cut]))
    assert prefix is not None
    tail = chat_pb2.ChatRequest()
    tail.CopyFrom(whole)
    del tail.messages[:cut]
    after = render_after(prefix, BEDROCK, tail, lambda: whole, source_bytes=whole.ByteSize()).encoded()
    body = json.loads(after.body_json)
    names = [t["toolSpec"]["name"] for t in body["toolConfig"]["tools"] if "toolSpec" in t]
    assert names == ["get_weather", "list_files"]
    assert after == render(BEDROCK, whole, capped_parts=True)


def test_merged_assistant_messages_get_the_notice_word_for_word() -> None:
    request = _request({"messages": [_user("a"), _assistant("b"), _assistant("c"), _user("d")]})
    body, notices, _ = _body(request)
    assert body["messages"][1] == {"role": "assistant", "content": [{"text": "b"}, {"text": "c"}]}
    assert notices == (
        Notice(
            "assistant_messages_merged",
            "sent in one assistant message with the one before it (Converse alternates roles)",
            "chat_request.messages[2]",
        ),
    )


def test_a_system_message_between_turns_goes_to_system_and_the_turns_go_on() -> None:
    request = _request(
        {
            "messages": [
                _user("Hi"),
                _assistant("Hello"),
                {"role": "CHAT_ROLE_SYSTEM", "content": "Note"},
                _user("Go"),
            ]
        }
    )
    body, _, _ = _body(request)
    assert body["system"] == [{"text": "Note"}]
    assert body["messages"] == [
        {"role": "user", "content": [{"text": "Hi"}]},
        {"role": "assistant", "content": [{"text": "Hello"}]},
        {"role": "user", "content": [{"text": "Go"}]},
    ]


def test_text_parts_and_documents_in_order_with_their_names() -> None:
    parts = [
        {"text": "a"},
        {"text": "  "},
        {"file": {"mimeType": "application/pdf", "filename": "my.report  v2!.pdf", "data": PDF_B64}},
        {"file": {"mimeType": "text/plain", "data": PNG_B64}},
        {"file": {"mimeType": "text/csv", "filename": "a/b.c.csv", "uri": "s3://bucket/k.csv"}},
        {"image": {"mimeType": "image/webp", "uri": "s3://bucket/i.webp"}},
    ]
    body, _, _ = _body(_request({"messages": [_user("hi", contentParts=parts)]}))
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"text": "hi"},
                {"text": "a"},
                {"document": {"format": "pdf", "name": "my report v2", "source": {"bytes": PDF_B64}}},
                {"document": {"format": "txt", "name": "document 4", "source": {"bytes": PNG_B64}}},
                {
                    "document": {
                        "format": "csv",
                        "name": "a b c",
                        "source": {"s3Location": {"uri": "s3://bucket/k.csv"}},
                    }
                },
                {"image": {"format": "webp", "source": {"s3Location": {"uri": "s3://bucket/i.webp"}}}},
            ],
        }
    ]


@pytest.mark.parametrize(
    ("part", "field", "description"),
    [
        (
            {"image": {"mimeType": "image/png", "uri": "file-abc"}},
            "image",
            "Converse takes media as data or an s3:// location, not a URL or file id",
        ),
        (
            {"file": {"mimeType": "application/pdf", "uri": "https://example.com/y.pdf"}},
            "file",
            "Converse takes media as data or an s3:// location, not a URL or file id",
        ),
        (
            {"image": {"mimeType": "image/bmp", "data": PNG_B64}},
            "image",
            "Converse takes image/png, image/jpeg, image/gif, image/webp images",
        ),
        (
            {"file": {"mimeType": "application/zip", "data": PNG_B64}},
            "file",
            "Converse takes application/pdf, text/plain, text/csv, text/html, text/markdown, "
            "application/msword, application/vnd.openxmlformats-officedocument.wordprocessingml.document, "
            "application/vnd.ms-excel, application/vnd.openxmlformats-officedocument.spreadsheetml.sheet "
            "documents",
        ),
    ],
)
def test_media_converse_cannot_take_is_refused_with_the_field_named(
    part: dict[str, Any], field: str, description: str
) -> None:
    request = _request({"messages": [_user("hi", contentParts=[{"text": "see"}, part])]})
    assert _refusal(request) == [
        FieldViolation(f"chat_request.messages[0].content_parts[1].{field}", description)
    ]


def test_video_for_a_model_the_registry_does_not_know_is_refused() -> None:
    request = _request(
        {
            "messages": [
                _user("hi", contentParts=[{"video": {"mimeType": "video/mp4", "uri": "s3://b/v.mp4"}}])
            ]
        }
    )
    request.model = "amazon.nova-pro-v1:0"
    assert _refusal(request) == [
        FieldViolation(
            "chat_request.messages[0].content_parts[0].video", "video parts are not rendered for Converse"
        )
    ]
