"""Amazon Bedrock Converse: exact paths, blocks, notices and refusals of the renderer.

Each body here is also checked against the SDK's request types and Converse's
conversation rules (tests/providers/bedrock/conformance.py).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from google.protobuf import json_format

from pioneer_grpc.errors import FieldViolation, InvalidArgument
from pioneer_grpc.providers import render
from pioneer_grpc.providers.apis.bedrock import path_for
from pioneer_grpc.providers.common import RUNTIME_CLOSE, RUNTIME_OPEN
from pioneer_grpc.providers.conversation import Notice
from pioneer_grpc.providers.prefix import render_prefix
from pioneer_grpc.providers.render import render_after
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.bedrock.rules import check_types
from tests.providers.bedrock.rules import strict as bedrock_strict
from tests.providers.cases import PDF, PNG, build, dynamic_text, stable_text

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


def test_tool_choice_none_sends_no_tools_when_the_conversation_holds_no_call() -> None:
    body, notices, _ = _body(build("tools_none", provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES))
    assert "toolConfig" not in body  # nothing the model could call
    assert notices == (
        Notice(
            "tool_choice_none_unsupported",
            "Converse has no tool choice none: the tools were not sent",
            "chat_request.tool_choice.mode",
        ),
    )


def test_tool_choice_none_on_a_conversation_with_tool_calls_is_refused() -> None:
    # Converse needs the tools declared for the calls in the history, and its toolChoice
    # (auto, any, tool) cannot stop the model calling one: none cannot be kept.
    request = build("tool_round_trip", provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES)
    request.model = MODEL
    request.tool_choice.mode = chat_pb2.TOOL_CHOICE_MODE_NONE
    [violation] = _refusal(request)
    assert violation.field == "chat_request.tool_choice.mode"
    assert "Converse has no tool choice none" in violation.description
    assert "use auto" in violation.description


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
            "get_weather, list_files declared, with no tool choice (Converse has no none): "
            "the model may call them",
            "chat_request.tools",
        ),
    )


@pytest.mark.parametrize("reasoning", [None, {}], ids=["unset", "empty"])
def test_no_reasoning_asked_is_no_notice(reasoning: dict[str, Any] | None) -> None:
    request = _request({"messages": [_user("hi")]})
    if reasoning is not None:
        request.reasoning.SetInParent()  # set, asking nothing: as PrepareTurn builds every round
    _, notices, _ = _body(request)
    assert notices == ()


@pytest.mark.parametrize(
    ("model", "forced"),
    [
        (MODEL, True),  # a Claude model the registry knows
        ("anthropic.claude-3-haiku-20240307-v1:0", True),
        ("amazon.nova-pro-v1:0", False),  # the registry does not say it takes one
        ("meta.llama3-1-70b-instruct-v1:0", False),
        ("us.anthropic.claude-opus-5-5-20260101-v1:0", False),  # its [tool_rules] entry says no
    ],
)
@pytest.mark.parametrize("mode", ["TOOL_CHOICE_MODE_REQUIRED", "TOOL_CHOICE_MODE_TOOL"])
def test_a_forced_choice_reaches_only_a_model_the_registry_says_takes_one(
    model: str, forced: bool, mode: str
) -> None:
    choice: dict[str, Any] = {"mode": mode}
    if mode == "TOOL_CHOICE_MODE_TOOL":
        choice["toolName"] = "get_weather"
    request = _request({"messages": [_user("hi")], "tools": [WEATHER], "toolChoice": choice})
    request.model = model
    if forced:
        body, _, _ = _body(request)
        assert set(body["toolConfig"]["toolChoice"]) == {"any" if mode.endswith("REQUIRED") else "tool"}
    else:
        [violation] = _refusal(request)
        assert violation.field == "chat_request.tool_choice.mode"


def test_a_models_file_can_say_a_model_takes_a_forced_choice(tmp_path: Any) -> None:
    from pioneer_grpc.models.registry import load_registry

    path = tmp_path / "models.toml"
    path.write_text('[tool_rules."nova-pro"]\nforced_tool_choice = true\n')
    request = _request(
        {"messages": [_user("hi")], "tools": [WEATHER], "toolChoice": {"mode": "TOOL_CHOICE_MODE_REQUIRED"}}
    )
    request.model = "us.amazon.nova-pro-v1:0"
    out = render(BEDROCK, request, models=load_registry(path))
    assert json.loads(out.body_json)["toolConfig"]["toolChoice"] == {"any": {}}


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
