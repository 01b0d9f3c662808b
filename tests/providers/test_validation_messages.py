"""Request validation word for word: each violation's field and the description a person acts on."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from google.protobuf import json_format

from pioneer_grpc.caps.chat import MAX_MESSAGES
from pioneer_grpc.errors import FieldViolation, InvalidArgument
from pioneer_grpc.providers import render
from pioneer_grpc.providers.common import MAX_CACHE_KEY_PREFIX_CHARS, Options
from pioneer_grpc.providers.prefix import render_prefix
from pioneer_grpc.providers.validate import prepare, resolve_options, tool_rule_violations
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.cases import MODELS, PNG, WEATHER

P = provider_service_pb2
CHAT, ANTHROPIC = P.PROVIDER_OPENAI_CHAT_COMPLETIONS, P.PROVIDER_ANTHROPIC_MESSAGES
USER = {"role": "CHAT_ROLE_USER", "content": "Weather in Lisbon?"}
IMAGE = {"image": {"data": base64.b64encode(PNG).decode(), "mimeType": "image/png"}}


def request(provider: int, **fields: Any) -> chat_pb2.ChatRequest:
    d: dict[str, Any] = {"model": MODELS[provider], "messages": [USER], **fields}
    return json_format.ParseDict(d, chat_pb2.ChatRequest())


def refused(provider: int, req: chat_pb2.ChatRequest, **kwargs: Any) -> list[tuple[str, str]]:
    with pytest.raises(InvalidArgument) as info:
        prepare(provider, req, **kwargs)
    assert info.value.message.startswith("invalid request: ")
    return [(v.field, v.description) for v in info.value.violations]


# --- options -----------------------------------------------------------------------------------


def test_options_are_resolved_field_by_field() -> None:
    assert resolve_options(P.RenderOptions(anthropic_min_cache_chars=100)) == (
        Options(anthropic_min_cache_chars=100),
        [],
    )
    both = P.RenderOptions(anthropic_min_cache_chars=100, cache_key_prefix="team-a")
    assert resolve_options(both) == (Options(100, "team-a"), [])
    longest = "k" * MAX_CACHE_KEY_PREFIX_CHARS
    assert resolve_options(P.RenderOptions(cache_key_prefix=longest)) == (
        Options(cache_key_prefix=longest),
        [],
    )
    assert resolve_options(P.RenderOptions(anthropic_min_cache_chars=-1)) == (
        Options(),
        [FieldViolation("options.anthropic_min_cache_chars", "must not be negative")],
    )
    before = P.RenderOptions(
        dynamic_context_placement=chat_pb2.DYNAMIC_CONTEXT_PLACEMENT_BEFORE_CONVERSATION,
        prompt_cache_thread_id="thr-1",
    )
    assert resolve_options(before) == (Options(dynamic_after=False, cache_thread_id="thr-1"), [])
    after = P.RenderOptions(dynamic_context_placement=chat_pb2.DYNAMIC_CONTEXT_PLACEMENT_AFTER_CONVERSATION)
    assert resolve_options(after) == (Options(), [])
    unknown = P.RenderOptions(dynamic_context_placement=7)  # type: ignore[arg-type]
    assert resolve_options(unknown) == (
        Options(),
        [FieldViolation("options.dynamic_context_placement", "unknown placement 7")],
    )


def test_prepare_names_option_fields_under_options() -> None:
    assert refused(CHAT, request(CHAT), options=P.RenderOptions(anthropic_min_cache_chars=-1)) == [
        ("options.anthropic_min_cache_chars", "must not be negative")
    ]


def test_options_over_their_caps_stop_validation_there() -> None:
    req = request(CHAT, model="")
    found = refused(CHAT, req, options=P.RenderOptions(cache_key_prefix="k" * 201))
    assert found == [("options.cache_key_prefix", "at most 200 characters (got 201)")]


# --- caps --------------------------------------------------------------------------------------


def test_message_caps_are_checked_unless_the_parts_were_capped_before() -> None:
    req = request(CHAT, messages=[{**USER, "content": "x" * 1_000_001}])
    assert refused(CHAT, req) == [
        ("chat_request.messages[0].content", "at most 1,000,000 characters (got 1,000,001)")
    ]


def test_with_capped_parts_the_compiled_prompt_is_not_capped_again() -> None:
    req = request(CHAT, compiledPrompt={"boundaryMarker": "m" * 201})
    assert refused(CHAT, req, capped_parts=True) == [
        ("chat_request.compiled_prompt.boundary_marker", "must be empty or the compiler's marker")
    ]


def test_the_message_count_cap_counts_the_prefix() -> None:
    many = [USER] * MAX_MESSAGES
    assert prepare(CHAT, request(CHAT, messages=many), capped_parts=True).request.messages
    prefix = render_prefix(CHAT, list(request(CHAT, messages=[USER, {**USER, "content": "Thanks"}]).messages))
    assert prefix is not None and prefix.size == 2
    req = request(CHAT, messages=[USER] * (MAX_MESSAGES - 1))
    assert refused(CHAT, req, capped_parts=True, prefix=prefix) == [
        ("chat_request.messages", f"at most {MAX_MESSAGES:,} items (got {MAX_MESSAGES + 1:,})")
    ]


def test_an_unknown_provider_is_named() -> None:
    assert refused(99, request(CHAT)) == [("provider", "must name a provider API")]


# --- tools and tool choice ---------------------------------------------------------------------


def test_each_tool_is_checked_even_after_one_with_bad_parameters() -> None:
    bad = {"name": "broken", "parameters": {"type": "string"}}
    req = request(CHAT, tools=[bad, {**WEATHER, "name": ""}])
    with pytest.raises(InvalidArgument) as info:
        render(CHAT, req)
    found = [(v.field, v.description) for v in info.value.violations]
    assert found[0][0] == "chat_request.tools[0].parameters"
    assert found[0][1] != "None" and "object" in found[0][1]
    assert found[1:] == [("chat_request.tools[1].name", "must not be empty")]


@pytest.mark.parametrize(
    ("choice", "tools", "expected"),
    [
        ({"mode": 99}, [WEATHER], ("chat_request.tool_choice.mode", "unknown mode 99")),
        (
            {"mode": "TOOL_CHOICE_MODE_TOOL"},
            [WEATHER],
            ("chat_request.tool_choice.tool_name", "required with TOOL_CHOICE_MODE_TOOL"),
        ),
        (
            {"mode": "TOOL_CHOICE_MODE_AUTO", "toolName": "get_weather"},
            [WEATHER],
            ("chat_request.tool_choice.tool_name", "only used with TOOL_CHOICE_MODE_TOOL"),
        ),
        (
            {"mode": "TOOL_CHOICE_MODE_REQUIRED"},
            [],
            ("chat_request.tool_choice.mode", "TOOL_CHOICE_MODE_REQUIRED needs at least one tool"),
        ),
    ],
)
def test_tool_choice_violations(choice: dict[str, Any], tools: list[Any], expected: tuple[str, str]) -> None:
    assert refused(CHAT, request(CHAT, tools=tools, toolChoice=choice)) == [expected]


def test_a_forced_choice_is_allowed_for_a_model_that_does_not_think() -> None:
    req = request(
        ANTHROPIC,
        model="claude-3-haiku-20240307",
        tools=[WEATHER],
        toolChoice={"mode": "TOOL_CHOICE_MODE_REQUIRED"},
        reasoning={"effort": "REASONING_EFFORT_LOW"},
    )
    assert tool_rule_violations(ANTHROPIC, req) == []


# --- messages ----------------------------------------------------------------------------------


def call(call_id: str = "c1", name: str = "get_weather") -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": "{}"}


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            {"role": 9, "content": "hi"},
            [("chat_request.messages[1].role", "must be system, user, assistant or tool")],
        ),
        (
            {"role": "CHAT_ROLE_TOOL", "content": "18°C"},
            [("chat_request.messages[1].tool_call_id", "required on a tool message")],
        ),
        (
            {"role": "CHAT_ROLE_USER", "content": "hi", "toolCalls": [call()]},
            [("chat_request.messages[1].tool_calls", "only assistant messages call tools")],
        ),
        (
            {"role": "CHAT_ROLE_ASSISTANT", "content": " \n"},
            [("chat_request.messages[1].content", "message is empty")],
        ),
        (
            {"role": "CHAT_ROLE_ASSISTANT", "toolCalls": [call(call_id="", name="")]},
            [
                ("chat_request.messages[1].tool_calls[0].id", "must not be empty"),
                ("chat_request.messages[1].tool_calls[0].name", "must not be empty"),
            ],
        ),
        (
            {"role": "CHAT_ROLE_USER", "contentParts": [{}]},
            [
                ("chat_request.messages[1].content_parts[0]", "empty content part"),
                ("chat_request.messages[1].content", "message is empty"),
            ],
        ),
        (
            {"role": "CHAT_ROLE_ASSISTANT", "content": "Here:", "contentParts": [IMAGE, IMAGE]},
            [
                (
                    "chat_request.messages[1].content_parts[0].image",
                    "only user and tool messages carry media",
                ),
                (
                    "chat_request.messages[1].content_parts[1].image",
                    "only user and tool messages carry media",
                ),
            ],
        ),
    ],
)
def test_message_violations(message: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert refused(CHAT, request(CHAT, messages=[USER, message])) == expected


def test_every_part_is_checked_after_a_text_part() -> None:
    bad = {"image": {"data": "bm90IGFuIGltYWdl"}}
    req = request(CHAT, messages=[{**USER, "contentParts": [{"text": "Look:"}, bad]}])
    [(field, description)] = refused(CHAT, req)
    assert field == "chat_request.messages[0].content_parts[1].image"
    assert description == "mime_type is required with inline data"


def test_media_alone_or_artifacts_alone_make_a_message() -> None:
    image_only = request(CHAT, messages=[{"role": "CHAT_ROLE_USER", "contentParts": [IMAGE]}])
    assert len(prepare(CHAT, image_only).request.messages) == 1
    refs = [{"artifactId": "a1", "displayName": "report.pdf", "kind": "file"}]
    artifacts_only = request(CHAT, messages=[{"role": "CHAT_ROLE_USER", "artifactRefs": refs}])
    assert len(prepare(CHAT, artifacts_only).request.messages) == 1


# --- reasoning ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reasoning", "expected"),
    [
        ({"effort": 42}, [("chat_request.reasoning.effort", "unknown effort 42")]),
        (
            {"disabled": True, "effort": "REASONING_EFFORT_LOW"},
            [("chat_request.reasoning.disabled", "conflicts with effort or budget_tokens")],
        ),
        ({"budgetTokens": -1}, [("chat_request.reasoning.budget_tokens", "must not be negative")]),
    ],
)
def test_reasoning_violations(reasoning: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert refused(CHAT, request(CHAT, model="o3", reasoning=reasoning)) == expected


def test_a_budget_of_zero_is_not_negative() -> None:
    prepare(CHAT, request(CHAT, model="o3", reasoning={"budgetTokens": 0}))


def test_anthropic_thinking_budget_bounds() -> None:
    at_minimum = request(ANTHROPIC, maxTokens=4096, reasoning={"budgetTokens": 1024})
    assert prepare(ANTHROPIC, at_minimum).request.reasoning.budget_tokens == 1024
    below = request(ANTHROPIC, maxTokens=4096, reasoning={"budgetTokens": 1023})
    assert refused(ANTHROPIC, below) == [
        (
            "chat_request.reasoning.budget_tokens",
            "anthropic extended thinking needs a budget of at least 1024 tokens, below max_tokens",
        )
    ]
    one_token = request(ANTHROPIC, maxTokens=1, reasoning={"effort": "REASONING_EFFORT_LOW"})
    assert refused(ANTHROPIC, one_token) == [
        (
            "chat_request.max_tokens",
            "anthropic extended thinking needs a budget of at least 1024 tokens, below max_tokens",
        )
    ]


# --- the caller's opening system text and the compiled prompt ----------------------------------


def test_opening_system_text_stays_apart_from_a_dynamic_half_after_the_conversation() -> None:
    messages = [{"role": "CHAT_ROLE_SYSTEM", "content": "Answer in Celsius."}, USER]
    compiled = {"stableSystemText": "You are Pioneer.", "dynamicSystemText": "Local time: 10:00."}
    prepared = prepare(CHAT, request(CHAT, messages=messages, compiledPrompt=compiled))
    assert (prepared.dynamic, prepared.runtime) == ("", "Local time: 10:00.")
    assert prepared.leading_system == ("Answer in Celsius.",)
    assert prepared.notices == ()


def test_opening_system_text_joins_a_compiled_prompt_with_a_stable_half_only() -> None:
    messages = [{"role": "CHAT_ROLE_SYSTEM", "content": "Answer in Celsius."}, USER]
    req = request(CHAT, messages=messages, compiledPrompt={"stableSystemText": "You are Pioneer."})
    before = P.RenderOptions(dynamic_context_placement=chat_pb2.DYNAMIC_CONTEXT_PLACEMENT_BEFORE_CONVERSATION)
    prepared = prepare(CHAT, req, before)
    assert prepared.dynamic == "Answer in Celsius."
    assert prepared.leading_system == ()
    assert [(n.code, n.message, n.field) for n in prepared.notices] == [
        (
            "system_message_merged",
            "the compiled prompt stands for the caller's system text: this system message was sent "
            "at the end of the prompt's dynamic half",
            "chat_request.messages[0]",
        )
    ]


# --- the request's own fields ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "fields", "expected"),
    [
        (CHAT, {"model": ""}, ("chat_request.model", "must not be empty")),
        (
            CHAT,
            {"compiledPrompt": {"stableSystemText": "You are Pioneer.", "boundaryMarker": "<!-- cut -->"}},
            ("chat_request.compiled_prompt.boundary_marker", "must be empty or the compiler's marker"),
        ),
        (CHAT, {"messages": []}, ("chat_request.messages", "at least one message is required")),
        (
            ANTHROPIC,
            {"messages": [{"role": "CHAT_ROLE_SYSTEM", "content": "Answer in Celsius."}]},
            ("chat_request.messages", "needs a user, assistant or tool message"),
        ),
        (CHAT, {"maxTokens": 0}, ("chat_request.max_tokens", "must be positive")),
        (CHAT, {"temperature": -0.5}, ("chat_request.temperature", "must be a finite number >= 0")),
    ],
)
def test_request_field_violations(provider: int, fields: dict[str, Any], expected: tuple[str, str]) -> None:
    assert refused(provider, request(provider, **fields)) == [expected]


def test_the_smallest_values_allowed_are_sent() -> None:
    prepared = prepare(CHAT, request(CHAT, model="gpt-4.1", maxTokens=1, temperature=0))
    assert (prepared.request.max_tokens, prepared.request.temperature) == (1, 0)


def test_a_budget_is_not_checked_for_a_model_it_is_not_sent_to() -> None:
    req = request(ANTHROPIC, model="claude-3-haiku-20240307", reasoning={"budgetTokens": 100})
    prepared = prepare(ANTHROPIC, req)
    assert not prepared.request.HasField("reasoning")
    assert [n.code for n in prepared.notices] == ["reasoning_not_sent"]


def test_history_tools_are_declared_with_their_description() -> None:
    calls = [{"id": "c1", "name": "get_weather", "arguments": "{}"}]
    messages = [
        USER,
        {"role": "CHAT_ROLE_ASSISTANT", "toolCalls": calls},
        {"role": "CHAT_ROLE_TOOL", "toolCallId": "c1", "content": "18°C"},
        {**USER, "content": "Thanks"},
    ]
    body = json.loads(render(ANTHROPIC, request(ANTHROPIC, messages=messages)).body_json)
    assert [(t["name"], t["description"]) for t in body["tools"]] == [
        ("get_weather", "Called earlier in this conversation; not available this round.")
    ]


def test_a_render_violation_names_the_message_by_its_index_in_the_request() -> None:
    image = {"image": {"uri": "file-abc123"}}
    messages = [
        {"role": "CHAT_ROLE_SYSTEM", "content": "Answer in Celsius."},
        {**USER, "contentParts": [image]},
    ]
    with pytest.raises(InvalidArgument) as info:
        render(CHAT, request(CHAT, messages=messages))
    assert [v.field for v in info.value.violations] == ["chat_request.messages[1].content_parts[0].image"]
