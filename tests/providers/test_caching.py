"""Caching from the compiled prompt split: breakpoints, keys, a stable prefix, and no marker."""

from __future__ import annotations

import hashlib
import itertools
import json
from typing import Any

import pytest

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.providers import render
from pioneer_grpc.providers.common import DEFAULT_BOUNDARY_MARKER, RUNTIME_CLOSE, RUNTIME_OPEN, dumps
from pioneer_grpc.v1 import chat_pb2, common_pb2, prompt_pb2, provider_service_pb2
from tests.providers.cases import (
    CASES,
    MARKER,
    MARKER_CORE,
    MODELS,
    PROVIDERS,
    build,
    compiled,
    dynamic_text,
    refused,
    stable_text,
    tool_round_trip,
)
from tests.providers.conformance import conformances

P = provider_service_pb2


def body_of(provider: int, request: chat_pb2.ChatRequest, **options: Any) -> tuple[dict[str, Any], str, int]:
    rendered = render(provider, request, P.RenderOptions(**options) if options else None)
    return json.loads(rendered.body_json), rendered.body_json, rendered.cache_breakpoints


def stable_block(provider: int, body: dict[str, Any]) -> Any:
    return conformances()[provider].stable_block(body)


# Every registered provider and every case it renders (a case it refuses has its refusal in its
# golden file: tests/providers/test_golden.py).
RENDERED = [
    pytest.param(case, provider, id=f"{case}-{name}")
    for name, provider in PROVIDERS.items()
    for case in CASES
    if not refused(case, provider)
]


def test_marker_constant_matches_the_compiler() -> None:
    from pioneer_grpc.compiler import boundary

    assert boundary.CACHE_BOUNDARY == DEFAULT_BOUNDARY_MARKER == MARKER


@pytest.mark.parametrize(("case", "provider"), RENDERED)
def test_marker_never_in_a_body_and_breakpoints_within_limit(case: str, provider: int) -> None:
    _, body_json, breakpoints = body_of(provider, build(case, provider))
    assert MARKER_CORE not in body_json
    assert "PIONEER_PROMT_CACHE_BOUNDARY" not in body_json
    assert 0 <= breakpoints <= 4
    assert body_json.count('"cache_control"') + body_json.count('"cachePoint"') == breakpoints


@pytest.mark.parametrize("provider", list(PROVIDERS.values()))
def test_marker_put_into_system_text_is_removed(provider: int) -> None:
    request = tool_round_trip()
    request.model = MODELS[provider]
    request.compiled_prompt.stable_system_text += MARKER
    request.compiled_prompt.dynamic_system_text = (
        f"{MARKER_CORE}\n{request.compiled_prompt.dynamic_system_text}"
    )
    request.messages.insert(
        0, chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_SYSTEM, content=f"Summary{MARKER}of earlier turns")
    )
    body, body_json, _ = body_of(provider, request)
    assert "PIONEER_PROMT_CACHE_BOUNDARY" not in body_json
    # Only the marker went: the stable half is exactly the compiler's stable text.
    block = stable_block(provider, body)
    text = block.get("content", block.get("text"))
    assert text == stable_text()


@pytest.mark.parametrize("provider", list(PROVIDERS.values()))
def test_full_text_alone_is_split_at_the_marker(provider: int) -> None:
    payload = compiled(dynamic_text())
    request = build("plain", provider)
    request.compiled_prompt.CopyFrom(
        prompt_pb2.CompiledPromptPayload(full_system_text=payload.full_system_text, boundary_marker=MARKER)
    )
    split = build("plain", provider)
    split.compiled_prompt.CopyFrom(payload)
    assert render(provider, request).body_json == render(provider, split).body_json


@pytest.mark.parametrize("provider", list(PROVIDERS.values()))
def test_stable_block_is_byte_identical_across_rounds(provider: int) -> None:
    first = tool_round_trip()
    second = tool_round_trip()
    second.compiled_prompt.CopyFrom(compiled(dynamic_text(now="2025-06-01 10:07 UTC")))
    second.messages.append(chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_ASSISTANT, content="You're welcome."))
    second.messages.append(chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content="One more question."))
    for request in (first, second):
        request.model = MODELS[provider]
    body1, json1, _ = body_of(provider, first)
    body2, json2, _ = body_of(provider, second)
    assert json1 != json2
    stable1 = dumps(stable_block(provider, body1))
    assert stable1 == dumps(stable_block(provider, body2))
    # Everything before the stable block's end is the same bytes: the cached prefix.
    end = json1.index(stable1) + len(stable1)
    assert json1[:end] == json2[:end]
    if provider in (P.PROVIDER_OPENAI_CHAT_COMPLETIONS, P.PROVIDER_OPENAI_RESPONSES):
        assert body1["prompt_cache_key"] == body2["prompt_cache_key"]


@pytest.mark.parametrize("provider", [P.PROVIDER_OPENAI_CHAT_COMPLETIONS, P.PROVIDER_OPENAI_RESPONSES])
def test_prompt_cache_key_is_prefix_and_stable_fingerprint(provider: int) -> None:
    request = build("plain_compiled", provider)
    fingerprint = request.compiled_prompt.manifest.fingerprint_stable
    assert fingerprint == hashlib.sha256(stable_text().encode()).hexdigest()
    body, _, _ = body_of(provider, request)
    assert body["prompt_cache_key"] == "pioneer-" + fingerprint[:32]
    body, _, _ = body_of(provider, request, cache_key_prefix="acme:")
    assert body["prompt_cache_key"] == "acme:" + fingerprint[:32]
    # Without a stable half there is nothing to key on.
    body, _, _ = body_of(provider, build("plain", provider))
    assert "prompt_cache_key" not in body


@pytest.mark.parametrize("provider", [P.PROVIDER_OPENAI_CHAT_COMPLETIONS, P.PROVIDER_OPENAI_RESPONSES])
def test_prompt_cache_key_of_a_thread_stays_whatever_the_prompt(provider: int) -> None:
    thread = hashlib.sha256(b"thread:thr-1").hexdigest()[:32]
    keys = set()
    for request in (
        build("plain_compiled", provider),
        build("plain", provider),
        build("short_stable", provider),
    ):
        body, _, _ = body_of(provider, request, prompt_cache_thread_id="thr-1")
        keys.add(body["prompt_cache_key"])
    assert keys == {"pioneer-" + thread}
    body, _, _ = body_of(provider, build("plain", provider), prompt_cache_thread_id="thr-2")
    assert body["prompt_cache_key"] != "pioneer-" + thread


BEFORE = chat_pb2.DYNAMIC_CONTEXT_PLACEMENT_BEFORE_CONVERSATION
SUMMARY = "Summary of earlier conversation:\nThe user plans a trip."
RUNTIME = f"{RUNTIME_OPEN}{dynamic_text()}{RUNTIME_CLOSE}"
# What a user turn opens the runtime context with (the constants' words, checked once here).
assert RUNTIME.startswith("<runtime-context>\nSet by the system for this request (not written by the user):")


@pytest.mark.parametrize("provider", [P.PROVIDER_OPENAI_CHAT_COMPLETIONS, P.PROVIDER_OPENAI_RESPONSES])
def test_openai_dynamic_half_is_a_system_message_after_the_conversation(provider: int) -> None:
    body, _, _ = body_of(provider, build("plain_compiled", provider))
    items = body["messages" if provider == P.PROVIDER_OPENAI_CHAT_COMPLETIONS else "input"]
    # The stable half first; the caller's opening system message (a summary) stays before the
    # conversation; the dynamic half ends it.
    assert items[0] == {"role": "system", "content": stable_text()}
    assert items[1] == {"role": "system", "content": SUMMARY}
    assert items[2]["role"] == "user"
    assert items[-1] == {"role": "system", "content": dynamic_text()}
    assert "system_message_merged" not in [
        n.code for n in render(provider, build("plain_compiled", provider)).notices
    ]


@pytest.mark.parametrize("provider", [P.PROVIDER_OPENAI_CHAT_COMPLETIONS, P.PROVIDER_OPENAI_RESPONSES])
def test_openai_halves_before_the_conversation_as_the_thread_may_keep_them(provider: int) -> None:
    body, _, _ = body_of(provider, build("plain_compiled", provider), dynamic_context_placement=BEFORE)
    items = body["messages" if provider == P.PROVIDER_OPENAI_CHAT_COMPLETIONS else "input"]
    assert items[0] == {"role": "system", "content": stable_text()}
    # The compiled prompt stands for the caller's own system message: it ends the dynamic half.
    assert items[1] == {"role": "system", "content": f"{dynamic_text()}\n\n{SUMMARY}"}
    assert items[2]["role"] == "user"
    assert items[-1]["role"] == "user"
    notices = render(
        provider, build("plain_compiled", provider), P.RenderOptions(dynamic_context_placement=BEFORE)
    ).notices
    assert ("system_message_merged", "chat_request.messages[0]") in [(n.code, n.field) for n in notices]


def test_anthropic_breakpoints_on_stable_block_and_the_conversation() -> None:
    provider = P.PROVIDER_ANTHROPIC_MESSAGES
    body, _, breakpoints = body_of(provider, build("tools_auto", provider))
    # The tools alone are under claude-sonnet-4-6's 1,024 tokens; with the stable half they are not.
    assert breakpoints == 2
    assert body["system"] == [{"type": "text", "text": stable_text(), "cache_control": {"type": "ephemeral"}}]
    assert all("cache_control" not in tool for tool in body["tools"])
    last = body["messages"][-1]["content"]
    assert last[0]["cache_control"] == {"type": "ephemeral"}
    assert last[1] == {"type": "text", "text": RUNTIME}
    # Where every prefix is long enough, all four: the last tool too.
    body, _, breakpoints = body_of(provider, build("tool_round_trip", provider), anthropic_min_cache_chars=1)
    assert breakpoints == 4
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert all("cache_control" not in tool for tool in body["tools"][:-1])


def test_anthropic_dynamic_half_before_the_conversation_as_the_thread_may_keep_it() -> None:
    provider = P.PROVIDER_ANTHROPIC_MESSAGES
    body, body_json, _ = body_of(provider, build("tools_auto", provider), dynamic_context_placement=BEFORE)
    assert body["system"][1] == {"type": "text", "text": dynamic_text()}
    assert "runtime-context" not in body_json


def test_anthropic_breakpoints_need_the_minimum_size() -> None:
    provider = P.PROVIDER_ANTHROPIC_MESSAGES
    body, _, breakpoints = body_of(provider, build("short_stable", provider))
    assert breakpoints == 0
    assert "cache_control" not in body["system"][0]
    body, _, breakpoints = body_of(provider, build("short_stable", provider), anthropic_min_cache_chars=0)
    assert breakpoints == 2  # the stable block and the one user message's anchor
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    long_enough = len(stable_text())
    body, _, _ = body_of(provider, build("plain_compiled", provider), anthropic_min_cache_chars=long_enough)
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    body, _, _ = body_of(
        provider, build("plain_compiled", provider), anthropic_min_cache_chars=long_enough + 1
    )
    assert "cache_control" not in body["system"][0]
    # The first user message is counted on: the conversation's anchors still qualify.
    assert body["messages"][-1]["content"][0]["cache_control"] == {"type": "ephemeral"}


def test_gemini_dynamic_half_is_a_user_content_after_the_conversation() -> None:
    provider = P.PROVIDER_GEMINI_GENERATE_CONTENT
    body, _, _ = body_of(provider, build("plain_compiled", provider))
    assert body["systemInstruction"]["parts"] == [{"text": stable_text()}, {"text": SUMMARY}]
    assert body["contents"][-1] == {"role": "user", "parts": [{"text": RUNTIME}]}
    assert body["contents"][-2]["role"] == "user"
    body, _, _ = body_of(provider, build("plain_compiled", provider), dynamic_context_placement=BEFORE)
    parts = body["systemInstruction"]["parts"]
    assert parts == [{"text": stable_text()}, {"text": f"{dynamic_text()}\n\n{SUMMARY}"}]
    assert all(content["role"] in ("user", "model") for content in body["contents"])


@pytest.mark.parametrize("provider", list(PROVIDERS.values()))
def test_a_conversation_ending_with_an_assistant_message_keeps_the_dynamic_half_before_it(
    provider: int,
) -> None:
    request = build("plain_compiled", provider)
    request.messages.append(chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_ASSISTANT, content="Lisbon has"))
    assert (
        render(provider, request).body_json
        == render(provider, request, P.RenderOptions(dynamic_context_placement=BEFORE)).body_json
    )


def _marker_free(provider: int, body_json: str) -> str:
    """The body without its breakpoints (Anthropic's keys, Bedrock's blocks)."""
    for marker in (',"cache_control":{"type":"ephemeral"}', ',{"cachePoint":{"type":"default"}}'):
        body_json = body_json.replace(marker, "")
    return body_json


BREAKPOINT_PROVIDERS = [P.PROVIDER_ANTHROPIC_MESSAGES, P.PROVIDER_AMAZON_BEDROCK_CONVERSE]
# Cases whose media Converse cannot take (an image by URL): refused, so they have no body to mark.
BEDROCK_REFUSES = {"images", "tool_result_media"}


def _breakpoint_request(case: str, provider: int) -> chat_pb2.ChatRequest:
    request = build(case, P.PROVIDER_ANTHROPIC_MESSAGES)
    if provider == P.PROVIDER_AMAZON_BEDROCK_CONVERSE:
        request.model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    return request


@pytest.mark.parametrize(
    ("case", "provider"),
    [
        (case, provider)
        for case in CASES
        for provider in BREAKPOINT_PROVIDERS
        if not (provider == P.PROVIDER_AMAZON_BEDROCK_CONVERSE and case in BEDROCK_REFUSES)
    ],
)
def test_a_breakpoint_changes_no_other_byte(case: str, provider: int) -> None:
    request = _breakpoint_request(case, provider)
    every = render(provider, request, P.RenderOptions(anthropic_min_cache_chars=0))
    none = render(provider, request, P.RenderOptions(anthropic_min_cache_chars=10**9))
    assert none.cache_breakpoints == 0
    assert every.cache_breakpoints > 0
    assert _marker_free(provider, every.body_json) == none.body_json


@pytest.mark.parametrize("case", sorted(BEDROCK_REFUSES))
def test_the_cases_left_out_for_bedrock_are_refused_for_their_media(case: str) -> None:
    provider = P.PROVIDER_AMAZON_BEDROCK_CONVERSE
    with pytest.raises(InvalidArgument, match="Converse takes media as data"):
        render(provider, _breakpoint_request(case, provider), P.RenderOptions(anthropic_min_cache_chars=0))


def _round_of(provider: int, parallel: int, rounds: int) -> list[chat_pb2.ChatRequest]:
    """The requests of an agent loop's rounds: each adds the model's `parallel` tool calls and their
    results (and a new turn each third round), the clock in the dynamic half changing every round."""
    request = tool_round_trip()
    request.model = MODELS[provider]
    out = []
    for n in range(rounds):
        request = chat_pb2.ChatRequest.FromString(request.SerializeToString())
        request.compiled_prompt.CopyFrom(compiled(dynamic_text(now=f"2025-06-01 10:{n:02d} UTC")))
        if n % 3 == 2:
            request.messages.append(
                chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_ASSISTANT, content=f"Answer {n}.")
            )
            request.messages.append(
                chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content=f"Question {n}?")
            )
        elif n:
            calls = [
                common_pb2.ToolCall(id=f"r{n}c{i}", name="list_files", arguments="{}")
                for i in range(parallel)
            ]
            request.messages.append(chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_ASSISTANT, tool_calls=calls))
            for call in calls:
                request.messages.append(
                    chat_pb2.ChatMessage(
                        role=chat_pb2.CHAT_ROLE_TOOL, tool_call_id=call.id, content=f"{call.id}: a.txt"
                    )
                )
        out.append(request)
    return out


def _without_runtime(provider: int, body: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """The body's fields but its conversation, and its conversation without the runtime context
    (markers removed)."""
    key = {P.PROVIDER_OPENAI_RESPONSES: "input", P.PROVIDER_GEMINI_GENERATE_CONTENT: "contents"}.get(
        provider, "messages"
    )
    body = json.loads(_marker_free(provider, dumps(body)))
    conversation = body.pop(key)
    if provider in (P.PROVIDER_ANTHROPIC_MESSAGES, P.PROVIDER_AMAZON_BEDROCK_CONVERSE):
        last = conversation[-1]
        assert "<runtime-context>" in last["content"][-1]["text"]
        conversation[-1] = {**last, "content": last["content"][:-1]}
    else:
        assert conversation.pop()["role"] in ("system", "user")  # OpenAI's system message, Gemini's content
    return body, conversation


@pytest.mark.parametrize("provider", list(PROVIDERS.values()))
def test_a_changed_runtime_fact_leaves_the_earlier_body_as_it_was(provider: int) -> None:
    # Round after round the clock changes; every body but its runtime context is the previous
    # body followed by new messages.
    bodies = [json.loads(render(provider, r).body_json) for r in _round_of(provider, 2, 7)]
    for earlier, later in itertools.pairwise(bodies):
        fields, conversation = _without_runtime(provider, earlier)
        later_fields, later_conversation = _without_runtime(provider, later)
        assert later_fields == fields
        assert later_conversation[: len(conversation)] == conversation
        assert len(later_conversation) > len(conversation)


@pytest.mark.parametrize("provider", BREAKPOINT_PROVIDERS)
@pytest.mark.parametrize("parallel", [1, 12])
def test_each_round_has_an_anchor_where_the_previous_round_had_its_newest(
    provider: int, parallel: int
) -> None:
    # Twelve parallel calls and their results add 24 blocks or more: past a 20-block lookback, the
    # previous round's prefix is still read at this round's anchor on it.
    def anchors(request: chat_pb2.ChatRequest) -> list[str]:
        body = json.loads(render(provider, request, P.RenderOptions(anthropic_min_cache_chars=0)).body_json)
        found = []
        for i, message in enumerate(body["messages"]):
            content = message["content"]
            for j, block in enumerate(content if isinstance(content, list) else []):
                if "cache_control" in block or "cachePoint" in block:
                    prefix = [*body["messages"][:i], {**message, "content": content[: j + 1]}]
                    found.append(_marker_free(provider, dumps({"m": prefix})))
        return found

    rounds = _round_of(provider, parallel, 6)
    for earlier, later in itertools.pairwise(rounds):
        newest = anchors(earlier)[-1]
        assert newest in anchors(later)


@pytest.mark.parametrize("provider", list(PROVIDERS.values()))
def test_without_a_compiled_prompt_system_messages_map_normally(provider: int) -> None:
    request = build("plain", provider)
    request.messages.insert(0, chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_SYSTEM, content="Be brief."))
    body, _, breakpoints = body_of(provider, request)
    assert breakpoints == 0
    if provider == P.PROVIDER_OPENAI_CHAT_COMPLETIONS:
        assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    elif provider == P.PROVIDER_OPENAI_RESPONSES:
        assert body["input"][0] == {"role": "system", "content": "Be brief."}
    elif provider == P.PROVIDER_ANTHROPIC_MESSAGES:
        assert body["system"] == [{"type": "text", "text": "Be brief."}]
    elif provider == P.PROVIDER_GEMINI_GENERATE_CONTENT:
        assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    elif provider == P.PROVIDER_AMAZON_BEDROCK_CONVERSE:
        assert body["system"] == [{"text": "Be brief."}]
    block = stable_block(provider, body)
    assert block.get("content", block.get("text")) == "Be brief."


@pytest.mark.parametrize(("case", "provider"), RENDERED)
def test_rendering_is_deterministic(case: str, provider: int) -> None:
    first = render(provider, build(case, provider)).body_json
    # A request that went over the wire and back renders to the same bytes.
    reparsed = chat_pb2.ChatRequest.FromString(build(case, provider).SerializeToString())
    assert render(provider, reparsed).body_json == first
    assert dumps(json.loads(first)) == first
