"""Media and error marks in tool results, rendered as each provider takes them, every change noticed."""

from __future__ import annotations

import base64
import json

import pytest
from google.protobuf import json_format

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.providers import render
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.cases import PDF, PNG, PROVIDERS, SCREENSHOT, build, rendered_cases
from tests.providers.conformance import conformances

P = provider_service_pb2


@pytest.mark.parametrize("name", [name for case, name in rendered_cases() if case == "tool_result_media"])
def test_each_change_to_a_tool_result_is_noticed(name: str) -> None:
    provider = PROVIDERS[name]
    out = render(provider, build("tool_result_media", provider))  # type: ignore[arg-type]
    conformances()[provider].strict(json.loads(out.body_json))
    assert [(n.code, n.field) for n in out.notices] == list(
        conformances()[provider].tool_result_media_notices
    )


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


def test_openai_and_gemini_carry_the_error_mark_in_the_result_itself() -> None:
    chat = json.loads(
        render(
            P.PROVIDER_OPENAI_CHAT_COMPLETIONS, build("tool_result_media", P.PROVIDER_OPENAI_CHAT_COMPLETIONS)
        ).body_json
    )
    tools = [m for m in chat["messages"] if m["role"] == "tool"]
    assert not tools[0]["content"].startswith("Tool error:")
    assert tools[1]["content"].startswith("Tool error:\n")
    provider = P.PROVIDER_OPENAI_RESPONSES
    items = json.loads(render(provider, build("tool_result_media", provider)).body_json)["input"]
    outputs = [i["output"] for i in items if i.get("type") == "function_call_output"]
    assert isinstance(outputs[0], list) and outputs[0][0] != {"type": "input_text", "text": "Tool error:"}
    assert str(outputs[1]).startswith("Tool error:\n")
    provider = P.PROVIDER_GEMINI_GENERATE_CONTENT
    contents = json.loads(render(provider, build("tool_result_media", provider)).body_json)["contents"]
    responses = [
        p["functionResponse"]["response"] for c in contents for p in c["parts"] if "functionResponse" in p
    ]
    assert "output" in responses[0] and "error" not in responses[0]
    assert "error" in responses[1] and "output" not in responses[1]


# A media part of a tool result, by what the model reads (the registry's `media`) and what the API
# takes in a tool result. Where the model does not read the kind, a line of text stands for the part
# in the result (media_not_sent) and nothing is moved; where it does, the API takes the part in the
# result, moves it to a user message after the results (tool_result_media_moved), or refuses it.
READS = {
    "gpt-4-0613": frozenset(),
    "gpt-5": frozenset({"image", "file"}),
    "gemini-2.5-flash": frozenset({"image", "file", "audio", "video"}),
}
IN_RESULT, MOVED, REFUSED = "in the result", "moved", "refused"
WHEN_READ = {
    "openai-chat": {"image": MOVED, "file": MOVED, "audio": REFUSED, "video": REFUSED},
    "openai-responses": {"image": IN_RESULT, "file": IN_RESULT, "audio": REFUSED, "video": REFUSED},
    "anthropic": {"image": IN_RESULT, "file": IN_RESULT, "audio": REFUSED, "video": REFUSED},
    "bedrock-converse": {"image": IN_RESULT, "file": IN_RESULT, "audio": REFUSED, "video": REFUSED},
    "gemini": {"image": IN_RESULT, "file": IN_RESULT, "audio": IN_RESULT, "video": IN_RESULT},
}
MEDIA = {
    "image": ("image/png", "shot.png", PNG),
    "file": ("application/pdf", "invoice.pdf", PDF),
    "audio": ("audio/wav", "memo.wav", b"RIFF\x24\x00\x00\x00WAVEfmt memo"),
    "video": ("video/mp4", "screen.mp4", b"\x00\x00\x00\x18ftypmp42 screen"),
}


def _result_with(model: str, *kinds: str) -> chat_pb2.ChatRequest:
    parts = [
        {kind: {"mimeType": MEDIA[kind][0], "filename": MEDIA[kind][1], "data": b64(MEDIA[kind][2])}}
        for kind in kinds
    ]
    return json_format.ParseDict(
        {
            "model": model,
            "messages": [
                {"role": "CHAT_ROLE_USER", "content": "What is on the screen?"},
                {
                    "role": "CHAT_ROLE_ASSISTANT",
                    "toolCalls": [{"id": "call_0", "name": "screenshot", "arguments": '{"tab":1}'}],
                },
                {
                    "role": "CHAT_ROLE_TOOL",
                    "toolCallId": "call_0",
                    "name": "screenshot",
                    "content": "Tab 1:",
                    "contentParts": parts,
                },
            ],
            "tools": [SCREENSHOT],
        },
        chat_pb2.ChatRequest(),
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize("kind", list(MEDIA))
@pytest.mark.parametrize("model", list(READS))
@pytest.mark.parametrize("provider", sorted(SPECS), ids=[SPECS[p].name for p in sorted(SPECS)])
def test_a_media_part_of_a_tool_result_gets_one_notice_saying_what_was_sent(
    provider: int, model: str, kind: str
) -> None:
    spec = SPECS[provider]
    part = "chat_request.messages[2].content_parts[0]"
    read = kind in READS[model]
    if read and WHEN_READ[spec.name][kind] == REFUSED:
        with pytest.raises(InvalidArgument) as info:
            render(provider, _result_with(model, kind))  # type: ignore[arg-type]
        assert [v.field for v in info.value.violations] == [f"{part}.{kind}"]
        return
    out = render(provider, _result_with(model, kind))  # type: ignore[arg-type]
    body = json.loads(out.body_json)
    conformances()[provider].strict(body)
    conformances()[provider].sdk_types(body, model)
    on_part = [(n.code, n.field) for n in out.notices if n.field.startswith(part)]
    data = b64(MEDIA[kind][2])
    if not read:
        assert on_part == [("media_not_sent", f"{part}.{kind}")]
        assert data not in out.body_json
        assert f"[{kind} {MEDIA[kind][1]} not sent: {model} does not read {kind} parts]" in out.body_json
    elif WHEN_READ[spec.name][kind] == MOVED:
        assert on_part == [("tool_result_media_moved", f"{part}.{kind}")]
        assert data in out.body_json
    else:
        assert on_part == []
        assert data in out.body_json


def test_a_result_with_media_moved_and_media_not_read_says_each_once() -> None:
    provider = P.PROVIDER_OPENAI_CHAT_COMPLETIONS
    out = render(provider, _result_with("gpt-5", "image", "audio"))
    body = json.loads(out.body_json)
    conformances()[provider].strict(body)
    part = "chat_request.messages[2].content_parts"
    # The model's notices come first (model_fit), then the tool results' (provider_rules).
    assert [(n.code, n.field) for n in out.notices] == [
        ("media_not_sent", f"{part}[1].audio"),
        ("tool_result_media_moved", f"{part}[0].image"),
    ]
    # The image follows the results; the line standing for the audio stays in the result.
    tool, moved = body["messages"][2], body["messages"][3]
    assert tool == {
        "role": "tool",
        "tool_call_id": "call_0",
        "content": "Tab 1:\n[audio memo.wav not sent: gpt-5 does not read audio parts]",
    }
    assert [p["type"] for p in moved["content"]] == ["text", "image_url"]
    assert len(body["messages"]) == 4
