"""Provider rules word for word: each notice's code, message and field, and the ids and names sent.

A notice is what a person reads to learn what was changed in their request before it went out,
so these tests hold the exact text, not only the code.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from google.protobuf import json_format

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.providers import render
from pioneer_grpc.providers.apis import anthropic as anthropic_api
from pioneer_grpc.providers.conversation import Paired
from pioneer_grpc.providers.prefix import extend_prefix, render_prefix
from pioneer_grpc.providers.provider_rules import _rewritten_id, adapt
from pioneer_grpc.providers.spec import PLAIN_NAME
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.cases import MODELS, PROVIDERS, WEATHER, build
from tests.providers.conformance import conformances

P = provider_service_pb2
ANTHROPIC, GEMINI = P.PROVIDER_ANTHROPIC_MESSAGES, P.PROVIDER_GEMINI_GENERATE_CONTENT
OPENAI_CHAT = P.PROVIDER_OPENAI_CHAT_COMPLETIONS
USER = {"role": "CHAT_ROLE_USER", "content": "Weather in Lisbon?"}
AGAIN = {"role": "CHAT_ROLE_USER", "content": "And in Porto?"}
THINKING = {"effort": "REASONING_EFFORT_LOW"}
LIST_FILES = {"name": "list_files", "description": "List files.", "parameters": {"type": "object"}}


def request(provider: int, **fields: Any) -> chat_pb2.ChatRequest:
    d: dict[str, Any] = {"model": MODELS[provider], "messages": [USER], **fields}
    return json_format.ParseDict(d, chat_pb2.ChatRequest())


def call(call_id: str, name: str = "get_weather") -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": '{"city":"Lisbon"}'}


def assistant(*calls: dict[str, str], text: str = "") -> dict[str, Any]:
    return {"role": "CHAT_ROLE_ASSISTANT", "content": text, "toolCalls": list(calls)}


def result(call_id: str, name: str = "") -> dict[str, Any]:
    return {"role": "CHAT_ROLE_TOOL", "toolCallId": call_id, "content": "18°C", "name": name}


def sent(provider: int, req: chat_pb2.ChatRequest) -> tuple[dict[str, Any], list[tuple[str, str, str]]]:
    """The body (checked by the provider's strict validator) and every notice as (code, message, field)."""
    out = render(provider, req)
    body = json.loads(out.body_json)
    conformances()[provider].strict(body)
    return body, [(n.code, n.message, n.field) for n in out.notices]


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


# --- the rewritten call id --------------------------------------------------------------------


def test_a_rewritten_id_keeps_the_ids_characters_in_the_pattern_and_a_digest_of_it() -> None:
    assert _rewritten_id("Call.ID:7", None) == f"Call_ID_7_{digest('Call.ID:7')}"


def test_a_rewritten_id_keeps_48_characters_of_a_long_id() -> None:
    long = "a" * 60
    assert _rewritten_id(long, None) == f"{'a' * 48}_{digest(long)}"
    # A cap above 61 leaves the 48 as they are.
    assert _rewritten_id("b" * 60, 64) == f"{'b' * 48}_{digest('b' * 60)}"


def test_a_rewritten_id_fits_the_providers_cap() -> None:
    # 20 characters: 7 of the id, "_" and the 12 of the digest.
    assert _rewritten_id("c" * 30, 20) == f"{'c' * 7}_{digest('c' * 30)}"
    # At 13, only the "_" and the digest are left.
    assert _rewritten_id("d" * 30, 13) == f"_{digest('d' * 30)}"


# --- call ids: the notice of each rewrite -----------------------------------------------------


def test_an_id_outside_anthropics_pattern_is_rewritten_with_the_pattern_named() -> None:
    messages = [USER, assistant(call("functions.get_weather:0")), result("functions.get_weather:0")]
    body, notices = sent(ANTHROPIC, request(ANTHROPIC, tools=[WEATHER], messages=messages))
    new = f"functions_get_weather_0_{digest('functions.get_weather:0')}"
    assert body["messages"][1]["content"][0]["id"] == new
    assert body["messages"][2]["content"][0]["tool_use_id"] == new
    assert notices == [
        (
            "tool_call_id_rewritten",
            f"anthropic takes call ids of {PLAIN_NAME.pattern}: 'functions.get_weather:0' is not one; "
            f"it was sent as {new!r} (in the call and in its result)",
            "chat_request.messages[1].tool_calls[0].id",
        )
    ]


def test_an_id_used_again_is_rewritten_with_its_use_counted() -> None:
    messages = [
        USER,
        assistant(call("call_0")),
        result("call_0"),
        AGAIN,
        assistant(call("call_0")),
        result("call_0"),
    ]
    body, notices = sent(ANTHROPIC, request(ANTHROPIC, tools=[WEATHER], messages=messages))
    new = f"call_0_2_{digest('call_0#2')}"
    assert [body["messages"][i]["content"][0].get("id") for i in (1, 4)] == ["call_0", new]
    assert body["messages"][5]["content"][0]["tool_use_id"] == new
    assert notices == [
        (
            "tool_call_id_rewritten",
            "anthropic needs call ids unique in the conversation: 'call_0' is used again; "
            f"it was sent as {new!r} (in the call and in its result)",
            "chat_request.messages[4].tool_calls[0].id",
        )
    ]


def _adapted_ids(spec: Any, call_id: str) -> tuple[str, list[tuple[str, str, str]]]:
    req = request(ANTHROPIC, tools=[WEATHER], messages=[USER, assistant(call(call_id)), result(call_id)])
    adapted = adapt(spec, req, Paired(list(req.messages), [0, 1, 2]), "chat_request")
    assert adapted.request.messages[2].tool_call_id == adapted.request.messages[1].tool_calls[0].id
    return adapted.request.messages[1].tool_calls[0].id, [
        (n.code, n.message, n.field) for n in adapted.notices
    ]


def test_an_id_over_a_providers_cap_is_rewritten_with_the_cap_named() -> None:
    capped = dataclasses.replace(anthropic_api.SPEC, max_call_id_chars=20)
    long = "toolu_" + "x" * 15  # 21 characters, in the pattern
    new, notices = _adapted_ids(capped, long)
    assert new == f"toolu_x_{digest(long)}"
    assert notices == [
        (
            "tool_call_id_rewritten",
            f"anthropic takes call ids of {PLAIN_NAME.pattern}, at most 20 characters: {long!r} is not one; "
            f"it was sent as {new!r} (in the call and in its result)",
            "chat_request.messages[1].tool_calls[0].id",
        )
    ]
    # Exactly at the cap: sent as it is.
    assert _adapted_ids(capped, long[:20]) == (long[:20], [])


def test_an_id_used_again_is_rewritten_within_the_providers_cap() -> None:
    capped = dataclasses.replace(anthropic_api.SPEC, max_call_id_chars=20)
    messages = [
        USER,
        assistant(call("call_0")),
        result("call_0"),
        AGAIN,
        assistant(call("call_0")),
        result("call_0"),
    ]
    req = request(ANTHROPIC, tools=[WEATHER], messages=messages)
    adapted = adapt(capped, req, Paired(list(req.messages), list(range(6))), "chat_request")
    new = f"call_0__{digest('call_0#2')}"  # "call_0_" (7 of "call_0_2"), "_", the digest
    assert [m.tool_calls[0].id for m in adapted.request.messages if m.tool_calls] == ["call_0", new]
    assert adapted.request.messages[5].tool_call_id == new


def test_a_cap_without_a_pattern_says_any() -> None:
    capped = dataclasses.replace(anthropic_api.SPEC, call_id=None, max_call_id_chars=20)
    long = "call." + "y" * 16
    new, notices = _adapted_ids(capped, long)
    assert new == f"call_yy_{digest(long)}"
    assert notices[0][1] == (
        f"anthropic takes call ids of any, at most 20 characters: {long!r} is not one; "
        f"it was sent as {new!r} (in the call and in its result)"
    )


# --- message by message: names, reasoning text, system messages, tool results ---------------


def test_anthropic_says_which_participant_name_was_not_sent() -> None:
    body, notices = sent(ANTHROPIC, request(ANTHROPIC, messages=[{**USER, "name": "ana"}]))
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Weather in Lisbon?"}]}]
    assert notices == [
        (
            "participant_name_dropped",
            "anthropic takes no participant name: 'ana' was not sent",
            "chat_request.messages[0].name",
        )
    ]


def test_openai_chat_says_which_participant_name_was_not_sent() -> None:
    _, notices = sent(OPENAI_CHAT, request(OPENAI_CHAT, messages=[{**USER, "name": "Ana Silva"}]))
    assert notices == [
        (
            "participant_name_dropped",
            "OpenAI takes participant names of [A-Za-z0-9_-] only: 'Ana Silva' was not sent",
            "chat_request.messages[0].name",
        )
    ]


def test_reasoning_text_is_not_sent_and_said_so() -> None:
    messages = [
        USER,
        {"role": "CHAT_ROLE_ASSISTANT", "content": "Sunny.", "reasoningContent": "Look it up."},
        AGAIN,
    ]
    body, notices = sent(OPENAI_CHAT, request(OPENAI_CHAT, messages=messages))
    assert "Look it up." not in json.dumps(body)
    assert notices == [
        (
            "reasoning_content_not_sent",
            "reasoning text is not sent back to a model (no provider takes it as plain text)",
            "chat_request.messages[1].reasoning_content",
        )
    ]


def test_a_system_message_inside_the_conversation_is_said_to_be_moved() -> None:
    messages = [USER, {"role": "CHAT_ROLE_SYSTEM", "content": "Answer in Celsius."}, AGAIN]
    _, notices = sent(ANTHROPIC, request(ANTHROPIC, messages=messages))
    assert notices == [
        (
            "system_message_moved",
            "anthropic takes system text apart from the conversation: this system message was sent "
            "there, after the system text before it, not at its place in the conversation",
            "chat_request.messages[1]",
        )
    ]


def test_tool_result_media_and_error_marks_word_for_word() -> None:
    _, notices = sent(OPENAI_CHAT, build("tool_result_media", OPENAI_CHAT))
    moved = (
        "openai-chat takes no {} in a tool result: it was sent in a user message "
        "right after the results of the call's turn"
    )
    assert notices == [
        ("tool_result_media_moved", moved.format("image"), "chat_request.messages[2].content_parts[0].image"),
        ("tool_result_media_moved", moved.format("file"), "chat_request.messages[2].content_parts[1].file"),
        (
            "tool_error_in_content",
            "openai-chat has no field marking a tool result as an error: "
            "the result's text starts with a line 'Tool error:'",
            "chat_request.messages[3].is_error",
        ),
        (
            "tool_call_id_rewritten",
            "openai-chat needs call ids unique in the conversation: 'call_0' is used again; "
            f"it was sent as 'call_0_2_{digest('call_0#2')}' (in the call and in its result)",
            "chat_request.messages[6].tool_calls[0].id",
        ),
        ("tool_result_media_moved", moved.format("image"), "chat_request.messages[7].content_parts[0].image"),
    ]


def test_a_call_name_outside_the_pattern_is_sent_with_underscores_and_said_so() -> None:
    messages = [USER, assistant(call("c1", name="get weather")), result("c1", name="get weather")]
    body, notices = sent(OPENAI_CHAT, request(OPENAI_CHAT, tools=[WEATHER], messages=messages))
    assert body["messages"][1]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert notices == [
        (
            "tool_call_name_rewritten",
            "tool names are [A-Za-z0-9_-] only: the call to 'get weather' was sent as 'get_weather'",
            "chat_request.messages[1].tool_calls[0].name",
        )
    ]


# --- Anthropic ---------------------------------------------------------------------------------


def test_anthropic_says_why_thinking_was_turned_off() -> None:
    messages = [USER, assistant(call("c1")), result("c1")]
    _, notices = sent(ANTHROPIC, request(ANTHROPIC, tools=[WEATHER], reasoning=THINKING, messages=messages))
    assert notices == [
        (
            "thinking_off_in_tool_loop",
            "extended thinking was turned off for this round: it continues an assistant turn "
            "(a tool loop or a prefill) whose thinking blocks cannot be sent back to Anthropic",
            "chat_request.reasoning",
        )
    ]


def test_anthropic_names_every_tool_declared_for_the_history() -> None:
    messages = [USER, assistant(call("c1"), call("c2", name="list_files")), result("c1"), result("c2"), AGAIN]
    body, notices = sent(ANTHROPIC, request(ANTHROPIC, messages=messages))
    assert [t["name"] for t in body["tools"]] == ["get_weather", "list_files"]
    assert notices == [
        (
            "tools_declared_for_history",
            "Anthropic refuses tool calls in the history without tool definitions: "
            "get_weather, list_files declared with tool_choice none",
            "chat_request.tools",
        )
    ]


def test_anthropic_says_the_temperature_was_not_sent() -> None:
    body, notices = sent(ANTHROPIC, request(ANTHROPIC, temperature=0.5))
    assert "temperature" not in body
    assert notices == [
        ("temperature_not_sent", "the Messages API takes no temperature here", "chat_request.temperature")
    ]


def test_anthropic_trims_the_end_of_a_final_assistant_message_only() -> None:
    messages = [USER, {"role": "CHAT_ROLE_ASSISTANT", "content": "  The forecast: \n"}]
    body, notices = sent(ANTHROPIC, request(ANTHROPIC, messages=messages))
    assert body["messages"][1] == {"role": "assistant", "content": "  The forecast:"}
    assert notices == [
        (
            "trailing_whitespace_trimmed",
            "Anthropic refuses a final assistant message ending in whitespace",
            "chat_request.messages[1].content",
        )
    ]


def test_anthropic_leaves_a_final_user_message_and_a_trimmed_assistant_message_as_they_are() -> None:
    body, notices = sent(
        ANTHROPIC, request(ANTHROPIC, messages=[{**USER, "content": "Weather in Lisbon?  "}])
    )
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Lisbon?  "}]}
    ]
    assert notices == []
    messages = [USER, {"role": "CHAT_ROLE_ASSISTANT", "content": "The forecast:"}]
    body, notices = sent(ANTHROPIC, request(ANTHROPIC, messages=messages))
    assert body["messages"][1] == {"role": "assistant", "content": "The forecast:"}
    assert notices == []


def test_anthropic_trims_trailing_whitespace_after_text_that_starts_at_once() -> None:
    messages = [USER, {"role": "CHAT_ROLE_ASSISTANT", "content": "Sunny. "}]
    body, notices = sent(ANTHROPIC, request(ANTHROPIC, messages=messages))
    assert body["messages"][1] == {"role": "assistant", "content": "Sunny."}
    assert [n[0] for n in notices] == ["trailing_whitespace_trimmed"]


# --- Gemini ------------------------------------------------------------------------------------


def test_gemini_tool_name_violation_says_what_gemini_needs() -> None:
    tool = {**WEATHER, "name": "1weather"}
    try:
        render(GEMINI, request(GEMINI, tools=[WEATHER, tool]))
    except InvalidArgument as exc:
        found = [(v.field, v.description) for v in exc.violations]
    else:
        raise AssertionError("rendered")
    assert found == [("chat_request.tools[1].name", "Gemini needs it to start with a letter or _")]


def test_gemini_says_parallel_tool_calls_false_was_not_sent() -> None:
    _, notices = sent(GEMINI, request(GEMINI, tools=[WEATHER], parallelToolCalls=False))
    assert notices == [
        (
            "parallel_tool_calls_unsupported",
            "Gemini has no switch for parallel function calls: the model may return several "
            "calls at once; parallel_tool_calls=false was not sent",
            "chat_request.parallel_tool_calls",
        )
    ]


def test_gemini_merges_assistant_messages_across_a_system_message() -> None:
    messages = [
        USER,
        {"role": "CHAT_ROLE_ASSISTANT", "content": "Let me check."},
        {"role": "CHAT_ROLE_SYSTEM", "content": "Answer in Celsius."},
        assistant(call("c1")),
        result("c1"),
    ]
    body, notices = sent(GEMINI, request(GEMINI, tools=[WEATHER], messages=messages))
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert notices[-1] == (
        "assistant_messages_merged",
        "sent in one model turn with the assistant message before it "
        "(Gemini needs a function call turn to follow a user or function response turn)",
        "chat_request.messages[3]",
    )


# --- a prefix rendered once: its notices carry over ------------------------------------------


def test_an_extended_prefix_keeps_the_prefixs_notices() -> None:
    for provider in (ANTHROPIC, OPENAI_CHAT, GEMINI):
        first = request(
            provider,
            tools=[WEATHER],
            messages=[USER, assistant(call("c1", name="get weather")), result("c1", name="get weather")],
        )
        prefix = render_prefix(provider, list(first.messages))
        assert prefix is not None
        assert [n.code for n in prefix.call_name_notices] == ["tool_call_name_rewritten"]
        longer = extend_prefix(provider, prefix, list(request(provider, messages=[AGAIN]).messages))
        assert longer is not None, PROVIDERS
        assert longer.call_name_notices == prefix.call_name_notices
        assert longer.message_notices == prefix.message_notices


def test_a_conversation_starting_with_the_assistant_says_what_it_must_start_with() -> None:
    messages = [
        {"role": "CHAT_ROLE_SYSTEM", "content": "Be brief."},
        {"role": "CHAT_ROLE_ASSISTANT", "content": "Hi"},
        USER,
    ]
    try:
        render(ANTHROPIC, request(ANTHROPIC, messages=messages))
    except InvalidArgument as exc:
        found = [(v.field, v.description) for v in exc.violations]
    else:
        raise AssertionError("rendered")
    assert found == [
        ("chat_request.messages[1].role", "the conversation must start with a user message for this provider")
    ]
