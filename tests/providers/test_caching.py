"""Caching from the compiled prompt split: breakpoints, keys, a stable prefix, and no marker."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from pioneer_grpc.providers import render
from pioneer_grpc.providers.common import DEFAULT_BOUNDARY_MARKER, dumps
from pioneer_grpc.v1 import chat_pb2, prompt_pb2, provider_service_pb2
from tests.providers.cases import (
    CASES,
    MARKER,
    MARKER_CORE,
    MODELS,
    PROVIDERS,
    build,
    compiled,
    dynamic_text,
    stable_text,
    tool_round_trip,
)

P = provider_service_pb2


def body_of(provider: int, request: chat_pb2.ChatRequest, **options: Any) -> tuple[dict[str, Any], str, int]:
    rendered = render(provider, request, P.RenderOptions(**options) if options else None)
    return json.loads(rendered.body_json), rendered.body_json, rendered.cache_breakpoints


def stable_block(provider: int, body: dict[str, Any]) -> Any:
    if provider == P.PROVIDER_OPENAI_CHAT_COMPLETIONS:
        return body["messages"][0]
    if provider == P.PROVIDER_OPENAI_RESPONSES:
        return body["input"][0]
    if provider == P.PROVIDER_ANTHROPIC_MESSAGES:
        return body["system"][0]
    return body["systemInstruction"]["parts"][0]


def test_marker_constant_matches_the_compiler() -> None:
    from pioneer_grpc.compiler import boundary

    assert boundary.CACHE_BOUNDARY == DEFAULT_BOUNDARY_MARKER == MARKER


@pytest.mark.parametrize("provider", list(PROVIDERS.values()))
@pytest.mark.parametrize("case", list(CASES))
def test_marker_never_in_a_body_and_breakpoints_within_limit(case: str, provider: int) -> None:
    _, body_json, breakpoints = body_of(provider, build(case, provider))
    assert MARKER_CORE not in body_json
    assert "PIONEER_PROMT_CACHE_BOUNDARY" not in body_json
    assert 0 <= breakpoints <= 4
    assert body_json.count('"cache_control"') == breakpoints


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
def test_openai_halves_are_separate_leading_system_messages(provider: int) -> None:
    body, _, _ = body_of(provider, build("plain_compiled", provider))
    items = body["messages" if provider == P.PROVIDER_OPENAI_CHAT_COMPLETIONS else "input"]
    assert items[0] == {"role": "system", "content": stable_text()}
    # The compiled prompt stands for the caller's own system message: it ends the dynamic half.
    summary = "Summary of earlier conversation:\nThe user plans a trip."
    assert items[1] == {"role": "system", "content": f"{dynamic_text()}\n\n{summary}"}
    assert items[2]["role"] == "user"
    notices = render(provider, build("plain_compiled", provider)).notices
    assert ("system_message_merged", "chat_request.messages[0]") in [(n.code, n.field) for n in notices]


def test_anthropic_breakpoints_on_stable_block_and_last_tool() -> None:
    provider = P.PROVIDER_ANTHROPIC_MESSAGES
    body, _, breakpoints = body_of(provider, build("tools_auto", provider))
    assert breakpoints == 2
    assert body["system"][0] == {
        "type": "text",
        "text": stable_text(),
        "cache_control": {"type": "ephemeral"},
    }
    assert body["system"][1] == {"type": "text", "text": dynamic_text()}
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert all("cache_control" not in tool for tool in body["tools"][:-1])


def test_anthropic_stable_breakpoint_needs_the_minimum_size() -> None:
    provider = P.PROVIDER_ANTHROPIC_MESSAGES
    body, _, breakpoints = body_of(provider, build("short_stable", provider))
    assert breakpoints == 0
    assert "cache_control" not in body["system"][0]
    body, _, breakpoints = body_of(provider, build("short_stable", provider), anthropic_min_cache_chars=0)
    assert breakpoints == 1
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    long_enough = len(stable_text())
    _, _, breakpoints = body_of(
        provider, build("plain_compiled", provider), anthropic_min_cache_chars=long_enough
    )
    assert breakpoints == 1
    _, _, breakpoints = body_of(
        provider, build("plain_compiled", provider), anthropic_min_cache_chars=long_enough + 1
    )
    assert breakpoints == 0


def test_gemini_system_instruction_has_both_halves_the_system_message_merged() -> None:
    provider = P.PROVIDER_GEMINI_GENERATE_CONTENT
    body, _, _ = body_of(provider, build("plain_compiled", provider))
    parts = body["systemInstruction"]["parts"]
    assert parts[0] == {"text": stable_text()}
    assert parts[1] == {
        "text": f"{dynamic_text()}\n\nSummary of earlier conversation:\nThe user plans a trip."
    }
    assert len(parts) == 2
    assert all(content["role"] in ("user", "model") for content in body["contents"])


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
    else:
        assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}


@pytest.mark.parametrize("provider", list(PROVIDERS.values()))
@pytest.mark.parametrize("case", list(CASES))
def test_rendering_is_deterministic(case: str, provider: int) -> None:
    first = render(provider, build(case, provider)).body_json
    # A request that went over the wire and back renders to the same bytes.
    reparsed = chat_pb2.ChatRequest.FromString(build(case, provider).SerializeToString())
    assert render(provider, reparsed).body_json == first
    assert dumps(json.loads(first)) == first
