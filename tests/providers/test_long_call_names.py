"""History tool calls whose names are longer than the provider's limit, for every provider.

The model made those calls earlier, so the caller cannot rename them (a request's own
tool over the limit is refused instead). Each is sent cut to the limit: its first
characters, `_` and 12 hex digits of the whole name's SHA-256, the same every round
and in a prefix rendered once, in the call, in its result and where the history's
tools are declared; a notice says so. Every body passes the provider's strict
validator and its SDK's request types.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from google.protobuf import json_format

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.providers import render
from pioneer_grpc.providers.prefix import extend_prefix, render_prefix
from pioneer_grpc.providers.provider_rules import HISTORY_TOOL_DESCRIPTION
from pioneer_grpc.providers.render import render_after
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.conformance import conformances

P = provider_service_pb2
PROVIDERS = sorted(SPECS)
IDS = [SPECS[p].name for p in PROVIDERS]
# Providers whose history is rendered once as a prefix (the others render every round whole).
PREFIXED = [p for p in PROVIDERS if SPECS[p].render_messages is not None]
# Providers that declare the tools called in the history when the round declares none.
DECLARING = [P.PROVIDER_ANTHROPIC_MESSAGES, P.PROVIDER_AMAZON_BEDROCK_CONVERSE]
LONG = "x" * 70
USER = {"role": "CHAT_ROLE_USER", "content": "Weather in Lisbon?"}
AGAIN = {"role": "CHAT_ROLE_USER", "content": "And in Porto?"}
WEATHER = {"name": "get_weather", "description": "Weather.", "parameters": {"type": "object"}}


def digest(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:12]


def limit(provider: int) -> int:
    return SPECS[provider].max_tool_name_chars


def cut(name: str, provider: int) -> str:
    """`name` as sent where it is over the provider's limit (written out here, not taken from the code)."""
    return f"{name[: limit(provider) - 13]}_{digest(name)}"


def call(call_id: str, name: str) -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": '{"city":"Lisbon"}'}


def turn(call_id: str, name: str, result_name: str = "") -> list[dict[str, Any]]:
    """An assistant message calling `name` and its result (naming the tool when `result_name`)."""
    return [
        {"role": "CHAT_ROLE_ASSISTANT", "toolCalls": [call(call_id, name)]},
        {"role": "CHAT_ROLE_TOOL", "toolCallId": call_id, "content": "18°C", "name": result_name},
    ]


def request(provider: int, messages: list[dict[str, Any]], **fields: Any) -> chat_pb2.ChatRequest:
    d = {"model": conformances()[provider].models[0].id, "messages": messages, **fields}
    return json_format.ParseDict(d, chat_pb2.ChatRequest())


def sent(provider: int, req: chat_pb2.ChatRequest) -> tuple[dict[str, Any], list[tuple[str, str, str]]]:
    """The body, checked by the provider's strict validator and SDK types, and its notices."""
    out = render(provider, req)
    body = json.loads(out.body_json)
    conformance = conformances()[provider]
    conformance.strict(body)
    conformance.sdk_types(body, req.model)
    return body, [(n.code, n.message, n.field) for n in out.notices]


def call_names(provider: int, body: dict[str, Any]) -> list[str]:
    if provider == P.PROVIDER_OPENAI_CHAT_COMPLETIONS:
        return [c["function"]["name"] for m in body["messages"] for c in m.get("tool_calls", [])]
    if provider == P.PROVIDER_OPENAI_RESPONSES:
        return [i["name"] for i in body["input"] if i.get("type") == "function_call"]
    if provider == P.PROVIDER_ANTHROPIC_MESSAGES:
        blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
        return [b["name"] for b in blocks if b["type"] == "tool_use"]
    if provider == P.PROVIDER_GEMINI_GENERATE_CONTENT:
        parts = [p for c in body["contents"] for p in c["parts"]]
        return [p["functionCall"]["name"] for p in parts if "functionCall" in p]
    assert provider == P.PROVIDER_AMAZON_BEDROCK_CONVERSE
    blocks = [b for m in body["messages"] for b in m["content"]]
    return [b["toolUse"]["name"] for b in blocks if "toolUse" in b]


def result_names(provider: int, body: dict[str, Any]) -> list[str]:
    """The tool names results carry (only Gemini's functionResponse names its function)."""
    if provider != P.PROVIDER_GEMINI_GENERATE_CONTENT:
        return []
    parts = [p for c in body["contents"] for p in c["parts"]]
    return [p["functionResponse"]["name"] for p in parts if "functionResponse" in p]


def declared(provider: int, body: dict[str, Any]) -> list[str]:
    if provider == P.PROVIDER_AMAZON_BEDROCK_CONVERSE:
        return [t["toolSpec"]["name"] for t in body.get("toolConfig", {}).get("tools", []) if "toolSpec" in t]
    if provider == P.PROVIDER_GEMINI_GENERATE_CONTENT:
        return [d["name"] for t in body.get("tools", []) for d in t.get("functionDeclarations", [])]
    if provider == P.PROVIDER_OPENAI_CHAT_COMPLETIONS:
        return [t["function"]["name"] for t in body.get("tools", [])]
    return [t["name"] for t in body.get("tools", [])]


def rewritten(name: str, as_sent: str, field: str) -> tuple[str, str, str]:
    return (
        "tool_call_name_rewritten",
        f"tool names are at most 64 characters: the call to {name!r} was sent as {as_sent!r}",
        field,
    )


# --- the limits ----------------------------------------------------------------------------


def test_the_limits_of_each_provider() -> None:
    assert {SPECS[p].name: limit(p) for p in PROVIDERS} == {
        "openai-chat": 64,
        "openai-responses": 64,
        "anthropic": 128,
        "gemini": 64,
        "bedrock-converse": 64,
    }


@pytest.mark.parametrize("provider", PROVIDERS, ids=IDS)
def test_a_requests_own_tool_over_the_limit_is_still_refused(provider: int) -> None:
    tool = {**WEATHER, "name": "x" * (limit(provider) + 1)}
    with pytest.raises(InvalidArgument) as info:
        render(provider, request(provider, [USER], tools=[tool]))
    assert [(v.field, v.description) for v in info.value.violations] == [
        ("chat_request.tools[0].name", f"longer than {limit(provider)} characters")
    ]


# --- a 70-character name ---------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS, ids=IDS)
def test_a_70_character_call_name_is_sent_within_the_limit(provider: int) -> None:
    body, notices = sent(provider, request(provider, [USER, *turn("c1", LONG, LONG), AGAIN], tools=[WEATHER]))
    if provider == P.PROVIDER_ANTHROPIC_MESSAGES:  # 128 characters: it fits as it is
        assert call_names(provider, body) == [LONG]
        assert [n for n in notices if n[0] == "tool_call_name_rewritten"] == []
        return
    expected = "x" * 51 + "_" + digest(LONG)
    assert expected == cut(LONG, provider)
    assert len(expected) == 64
    assert call_names(provider, body) == [expected]
    assert declared(provider, body) == ["get_weather"]
    assert LONG not in json.dumps(body)
    assert notices == [rewritten(LONG, expected, "chat_request.messages[1].tool_calls[0].name")]


@pytest.mark.parametrize("provider", PROVIDERS, ids=IDS)
def test_a_name_over_the_limit_is_cut_and_the_result_follows_its_call(provider: int) -> None:
    long = "weather_" + "y" * limit(provider)
    expected = cut(long, provider)
    assert len(expected) == limit(provider)
    for result_name in (long, ""):
        body, notices = sent(
            provider, request(provider, [USER, *turn("c1", long, result_name), AGAIN], tools=[WEATHER])
        )
        assert call_names(provider, body) == [expected]
        if provider == P.PROVIDER_GEMINI_GENERATE_CONTENT:
            assert result_names(provider, body) == [expected]
        assert long not in json.dumps(body)
        assert [n for n in notices if n[0] == "tool_call_name_rewritten"] == [
            (
                "tool_call_name_rewritten",
                f"tool names are at most {limit(provider)} characters: "
                f"the call to {long!r} was sent as {expected!r}",
                "chat_request.messages[1].tool_calls[0].name",
            )
        ]


@pytest.mark.parametrize("provider", DECLARING, ids=["anthropic", "bedrock-converse"])
def test_the_history_tools_are_declared_by_the_names_sent(provider: int) -> None:
    long = "z" * (limit(provider) + 6)
    body, notices = sent(provider, request(provider, [USER, *turn("c1", long, long), AGAIN]))
    assert call_names(provider, body) == declared(provider, body) == [cut(long, provider)]
    assert long not in json.dumps(body)
    tools = body["tools"] if provider == P.PROVIDER_ANTHROPIC_MESSAGES else body["toolConfig"]["tools"]
    description = tools[0].get("description") or tools[0]["toolSpec"]["description"]
    assert description == HISTORY_TOOL_DESCRIPTION
    assert [n[0] for n in notices] == ["tool_call_name_rewritten", "tools_declared_for_history"]


def test_a_name_over_the_limit_and_outside_the_pattern_gets_one_notice_naming_both() -> None:
    provider = P.PROVIDER_OPENAI_CHAT_COMPLETIONS
    long = "get weather " + "w" * 60  # 72 characters, two spaces
    body, notices = sent(provider, request(provider, [USER, *turn("c1", long), AGAIN], tools=[WEATHER]))
    expected = "get_weather_" + "w" * 39 + "_" + digest(long)
    assert call_names(provider, body) == [expected]
    assert notices == [
        (
            "tool_call_name_rewritten",
            f"tool names are [A-Za-z0-9_-] only, at most 64 characters: the call to {long!r} "
            f"was sent as {expected!r}",
            "chat_request.messages[1].tool_calls[0].name",
        )
    ]


def test_a_name_of_exactly_the_limit_is_sent_as_it_is() -> None:
    provider = P.PROVIDER_AMAZON_BEDROCK_CONVERSE
    name = "n" * 64
    body, notices = sent(provider, request(provider, [USER, *turn("c1", name), AGAIN], tools=[WEATHER]))
    assert call_names(provider, body) == [name]
    assert [n for n in notices if n[0] == "tool_call_name_rewritten"] == []


# --- distinct and stable ---------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS, ids=IDS)
def test_two_long_names_sharing_their_first_characters_stay_distinct(provider: int) -> None:
    first, second = "x" * limit(provider) + "first", "x" * limit(provider) + "second"
    messages = [USER, *turn("c1", first, first), *turn("c2", second, second), AGAIN]
    body, notices = sent(provider, request(provider, messages))
    assert cut(first, provider) != cut(second, provider)
    assert call_names(provider, body) == [cut(first, provider), cut(second, provider)]
    if provider == P.PROVIDER_GEMINI_GENERATE_CONTENT:
        assert result_names(provider, body) == [cut(first, provider), cut(second, provider)]
    if provider in DECLARING:
        assert declared(provider, body) == [cut(first, provider), cut(second, provider)]
    assert [n[2] for n in notices if n[0] == "tool_call_name_rewritten"] == [
        "chat_request.messages[1].tool_calls[0].name",
        "chat_request.messages[3].tool_calls[0].name",
    ]


@pytest.mark.parametrize("provider", PROVIDERS, ids=IDS)
def test_the_same_name_is_sent_the_same_every_call_and_every_round(provider: int) -> None:
    long = "x" * (limit(provider) + 6)
    history = [USER, *turn("c1", long, long)]
    first, _ = sent(provider, request(provider, [*history, AGAIN], tools=[WEATHER]))
    later, _ = sent(
        provider, request(provider, [*history, AGAIN, *turn("c2", long), *turn("c3", long)], tools=[WEATHER])
    )
    assert call_names(provider, first) == [cut(long, provider)]
    assert call_names(provider, later) == [cut(long, provider)] * 3
    again, _ = sent(provider, request(provider, [*history, AGAIN], tools=[WEATHER]))
    assert again == first


@pytest.mark.parametrize("provider", PREFIXED, ids=[SPECS[p].name for p in PREFIXED])
def test_a_prefix_extended_sends_the_names_the_whole_render_sends(provider: int) -> None:
    long = "x" * (limit(provider) + 6)
    other = "x" * (limit(provider) + 7)
    first = json_format.ParseDict({"messages": [USER, *turn("c1", long, long)]}, chat_pb2.ChatRequest())
    more = json_format.ParseDict(
        {"messages": [AGAIN, *turn("c2", other, other), *turn("c3", long)]}, chat_pb2.ChatRequest()
    )
    prefix = render_prefix(provider, list(first.messages))
    assert prefix is not None
    extended = extend_prefix(provider, prefix, list(more.messages))
    whole = render_prefix(provider, [*first.messages, *more.messages])
    assert extended is not None and whole is not None
    assert json.dumps(extended.rendered) == json.dumps(whole.rendered)
    assert extended.call_name_notices == whole.call_name_notices
    assert extended == whole
    # The prefix's messages (the last may take the next user message in) are the whole's first.
    assert whole.rendered[: len(prefix.rendered) - 1] == prefix.rendered[:-1]
    assert cut(long, provider) in json.dumps(prefix.rendered)
    assert long not in json.dumps(whole.rendered)
    if provider in DECLARING:
        assert whole.called == (cut(long, provider), cut(other, provider))
    assert [(n.message, n.field) for n in whole.call_name_notices] == [
        (
            f"tool names are at most {limit(provider)} characters: "
            f"the call to {name!r} was sent as {cut(name, provider)!r}",
            f"chat_request.messages[{index}].tool_calls[0].name",
        )
        for name, index in ((long, 1), (other, 4), (long, 6))
    ]
    # A round rendered after the prefix is the round rendered from scratch.
    round_messages = [AGAIN, *turn("c2", other, other), *turn("c3", long), {**AGAIN, "content": "Thanks."}]
    scratch = request(provider, [*json_format.MessageToDict(first)["messages"], *round_messages])
    tail = request(provider, round_messages)
    after = render_after(prefix, provider, tail, lambda: scratch, source_bytes=scratch.ByteSize()).encoded()
    assert after == render(provider, scratch)
    body = json.loads(after.body_json)
    conformances()[provider].strict(body)
    conformances()[provider].sdk_types(body, scratch.model)
    assert call_names(provider, body) == [cut(long, provider), cut(other, provider), cut(long, provider)]
