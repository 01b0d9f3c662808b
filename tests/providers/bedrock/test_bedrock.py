"""Amazon Bedrock Converse: every body passes the SDK's request types and Converse's conversation rules
(tests/providers/bedrock/conformance.py)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from google.protobuf import json_format

from pioneer_grpc.providers import render
from pioneer_grpc.providers.prefix import render_prefix
from pioneer_grpc.providers.render import render_after
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.bedrock.conformance import BEDROCK, MODEL
from tests.providers.bedrock.rules import check_types
from tests.providers.bedrock.rules import strict as bedrock_strict
from tests.providers.cases import CASES, PDF, PNG, build
from tests.providers.strict import StrictViolation

P = provider_service_pb2


def rendered(
    req: chat_pb2.ChatRequest, options: provider_service_pb2.RenderOptions | None = None
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    out = render(BEDROCK, req, options)
    body = json.loads(out.body_json)
    bedrock_strict(body)
    check_types(body, req.model)
    return body, [(n.code, n.field) for n in out.notices]


def _bedrock_case(case: str) -> chat_pb2.ChatRequest:
    request = build(case, P.PROVIDER_ANTHROPIC_MESSAGES)
    request.model = MODEL
    for message in request.messages:  # Converse takes no URL: the same media from S3
        for part in message.content_parts:
            for kind in ("image", "file"):
                if part.HasField(kind) and getattr(part, kind).uri.startswith("https://"):
                    getattr(part, kind).uri = "s3://bucket/" + getattr(part, kind).uri.rsplit("/", 1)[-1]
    return request


@pytest.mark.parametrize("case", list(CASES))
def test_every_case_passes_the_sdk_types_and_the_conversation_rules(case: str) -> None:
    out = render(BEDROCK, _bedrock_case(case))
    assert out.path == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
    body = json.loads(out.body_json)
    bedrock_strict(body)
    check_types(body, MODEL)


def test_the_validators_can_fail() -> None:
    with pytest.raises(StrictViolation) as info:
        bedrock_strict({"modelId": "m", "messages": [{"role": "assistant", "content": [{"text": " "}]}]})
    assert {"BR7", "BR1", "BR2", "BR9"} <= info.value.rules
    with pytest.raises(ValueError):
        check_types({"messages": [{"role": "user", "content": [{"text": "hi", "cache": 1}]}]}, MODEL)


CACHE_POINT = {"cachePoint": {"type": "default"}}


def test_cache_points_at_the_boundary_after_the_tools_and_on_the_conversation() -> None:
    # Every prefix is long enough at 10 characters: all four checkpoints are placed.
    body, notices = rendered(_bedrock_case("tool_round_trip"), P.RenderOptions(anthropic_min_cache_chars=10))
    system = body["system"]
    assert "text" in system[0]
    assert system[1] == CACHE_POINT
    assert "cachePoint" not in json.dumps(system[2:])
    assert body["toolConfig"]["tools"][-1] == CACHE_POINT
    marked = [
        (i, m["content"].index(CACHE_POINT))
        for i, m in enumerate(body["messages"])
        if CACHE_POINT in m["content"]
    ]
    # The last block of the newest user turn, before the runtime context, and of the user turn
    # before the newest assistant message (the previous round's newest anchor).
    last = len(body["messages"]) - 1
    assert [i for i, _ in marked] == [last - 2, last]
    assert body["messages"][last]["content"][marked[-1][1] + 1]["text"].startswith("<runtime-context>")
    assert (
        render(
            BEDROCK, _bedrock_case("tool_round_trip"), P.RenderOptions(anthropic_min_cache_chars=10)
        ).cache_breakpoints
        == 4
    )
    assert notices == []


def test_no_cache_point_where_the_prefix_is_under_the_models_minimum() -> None:
    # claude-sonnet-4-5 caches from 1,024 tokens: the tools alone do not reach it, the tools and
    # the stable prompt do (and so does the conversation after them).
    body, _ = rendered(_bedrock_case("tools_auto"))
    assert body["system"][1] == CACHE_POINT
    assert CACHE_POINT not in body["toolConfig"]["tools"]
    assert body["messages"][-1]["content"][1] == CACHE_POINT
    assert body["toolConfig"]["toolChoice"] == {"auto": {}}
    assert render(BEDROCK, _bedrock_case("tools_auto")).cache_breakpoints == 2
    # Without the compiled prompt nothing reaches it: no checkpoint at all.
    bare = _bedrock_case("tools_auto")
    bare.ClearField("compiled_prompt")
    assert render(BEDROCK, bare).cache_breakpoints == 0


def test_tool_use_and_results_with_media_and_an_error_mark() -> None:
    body, notices = rendered(_bedrock_case("tool_result_media"))
    messages = body["messages"]
    assert [m["role"] for m in messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    uses = [b["toolUse"]["toolUseId"] for b in messages[1]["content"]]
    assert uses == ["call_0", "call_1"]
    first, second = (b["toolResult"] for b in messages[2]["content"])
    assert [next(iter(b)) for b in first["content"]] == ["text", "image", "document"]
    assert first["content"][1]["image"] == {
        "format": "png",
        "source": {"bytes": base64.b64encode(PNG).decode()},
    }
    assert first["content"][2]["document"]["name"] == "invoice"
    assert first["content"][2]["document"]["format"] == "pdf"
    assert first["content"][2]["document"]["source"] == {"bytes": base64.b64encode(PDF).decode()}
    assert second["status"] == "error"
    assert "status" not in first
    # call_0 again in a later turn: an id of its own, the same in the call and its result.
    again = messages[5]["content"][0]["toolUse"]["toolUseId"]
    assert again != "call_0"
    assert messages[6]["content"][0]["toolResult"]["toolUseId"] == again
    assert notices == [("tool_call_id_rewritten", "chat_request.messages[6].tool_calls[0].id")]


def test_consecutive_messages_of_one_role_are_one_message() -> None:
    messages = [
        {"role": "CHAT_ROLE_USER", "content": "Hi"},
        {"role": "CHAT_ROLE_USER", "content": "Are you there?"},
        {"role": "CHAT_ROLE_ASSISTANT", "content": "Yes."},
        {"role": "CHAT_ROLE_ASSISTANT", "content": "How can I help?"},
        {"role": "CHAT_ROLE_USER", "content": "Thanks"},
    ]
    req = json_format.ParseDict({"model": MODEL, "messages": messages}, chat_pb2.ChatRequest())
    body, notices = rendered(req)
    assert [len(m["content"]) for m in body["messages"]] == [2, 2, 1]
    assert notices == [("assistant_messages_merged", "chat_request.messages[3]")]


def test_unknown_and_other_family_models_are_named() -> None:
    req = _bedrock_case("plain")
    req.model = "amazon.nova-pro-v1:0"
    assert rendered(req)[1] == [("unknown_model", "chat_request.model")]
    req.model = "gpt-4.1-mini"
    assert rendered(req)[1] == [("model_family_mismatch", "chat_request.model")]


def test_a_url_is_refused_with_the_field_named() -> None:
    req = build("images", P.PROVIDER_ANTHROPIC_MESSAGES)
    req.model = MODEL
    with pytest.raises(Exception) as info:
        render(BEDROCK, req)
    assert "messages[0].content_parts[0].image" in str(info.value)


def test_tool_choice_none_and_history_tools() -> None:
    body, notices = rendered(_bedrock_case("tools_none"))
    assert "toolConfig" not in body
    assert notices == [("tool_choice_none_unsupported", "chat_request.tool_choice.mode")]
    req = _bedrock_case("tool_round_trip")
    del req.tools[:]
    req.ClearField("tool_choice")
    body, notices = rendered(req)
    assert [t["toolSpec"]["name"] for t in body["toolConfig"]["tools"]] == ["get_weather", "list_files"]
    assert "toolChoice" not in body["toolConfig"]
    assert ("tools_declared_for_history", "chat_request.tools") in notices


@pytest.mark.parametrize("tail_case", ["after tool results", "after an answer"])
def test_a_rendered_prefix_gives_the_body_from_scratch(tail_case: str) -> None:
    whole = _bedrock_case("tool_result_media")
    cut = 4 if tail_case == "after tool results" else 5  # messages[4] is an assistant answer
    if tail_case == "after tool results":
        del whole.messages[4]  # the history ends with tool results: merged with the user's text
    history = list(whole.messages[:cut])
    tail = chat_pb2.ChatRequest()
    tail.CopyFrom(whole)
    del tail.messages[:cut]
    assert tail.messages[0].role == chat_pb2.CHAT_ROLE_USER
    prefix = render_prefix(BEDROCK, history)
    assert prefix is not None
    after = render_after(prefix, BEDROCK, tail, lambda: whole, source_bytes=whole.ByteSize()).encoded()
    scratch = render(BEDROCK, whole, capped_parts=True)
    assert after == scratch
    bedrock_strict(json.loads(after.body_json))
