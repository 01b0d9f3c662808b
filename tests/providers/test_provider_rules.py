"""Provider rules decided before sending: rejected with the field named, or adapted with a notice."""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.providers import render
from pioneer_grpc.providers.conversation import INTERRUPTED_RESULT
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.conftest import ServerHandle
from tests.providers.cases import MODELS, PROVIDERS, WEATHER, build, rendered_cases
from tests.providers.conformance import conformances
from tests.support import failure

P = provider_service_pb2
ALL = list(PROVIDERS.values())
ANTHROPIC, GEMINI = P.PROVIDER_ANTHROPIC_MESSAGES, P.PROVIDER_GEMINI_GENERATE_CONTENT
OPENAI_CHAT = P.PROVIDER_OPENAI_CHAT_COMPLETIONS
USER = {"role": "CHAT_ROLE_USER", "content": "Weather in Lisbon?"}
THINKING = {"effort": "REASONING_EFFORT_LOW"}


def request(provider: int, **fields: Any) -> chat_pb2.ChatRequest:
    d: dict[str, Any] = {"model": MODELS[provider], "messages": [USER], **fields}
    return json_format.ParseDict(d, chat_pb2.ChatRequest())


def call(call_id: str, name: str = "get_weather", arguments: str = '{"city":"Lisbon"}') -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": arguments}


def assistant(*calls: dict[str, str], text: str = "") -> dict[str, Any]:
    return {"role": "CHAT_ROLE_ASSISTANT", "content": text, "toolCalls": list(calls)}


def result(call_id: str, text: str = "18°C", name: str = "") -> dict[str, Any]:
    return {"role": "CHAT_ROLE_TOOL", "toolCallId": call_id, "content": text, "name": name}


def violations(provider: int, req: chat_pb2.ChatRequest) -> dict[str, str]:
    with pytest.raises(InvalidArgument) as info:
        render(provider, req)
    return {v.field: v.description for v in info.value.violations}


def rendered(provider: int, req: chat_pb2.ChatRequest) -> tuple[dict[str, Any], dict[str, str]]:
    """The body (checked by the strict validator of the provider) and the notices by code."""
    out = render(provider, req)
    body = json.loads(out.body_json)
    conformances()[provider].strict(body)
    return body, {n.code: n.field for n in out.notices}


# --- Anthropic: tool choice with extended thinking -------------------------------------------


@pytest.mark.parametrize(
    "choice",
    [{"mode": "TOOL_CHOICE_MODE_REQUIRED"}, {"mode": "TOOL_CHOICE_MODE_TOOL", "toolName": "get_weather"}],
)
def test_anthropic_tool_choice_any_with_thinking_is_rejected(choice: dict[str, str]) -> None:
    req = request(ANTHROPIC, tools=[WEATHER], toolChoice=choice, reasoning=THINKING)
    found = violations(ANTHROPIC, req)
    assert list(found) == ["chat_request.tool_choice.mode"]
    assert "only auto or none" in found["chat_request.tool_choice.mode"]


@pytest.mark.parametrize("mode", ["TOOL_CHOICE_MODE_AUTO", "TOOL_CHOICE_MODE_NONE"])
def test_anthropic_auto_and_none_are_allowed_with_thinking(mode: str) -> None:
    body, _ = rendered(
        ANTHROPIC, request(ANTHROPIC, tools=[WEATHER], toolChoice={"mode": mode}, reasoning=THINKING)
    )
    assert body["thinking"]["type"] == "enabled"


def test_forced_tool_choice_without_thinking_still_renders_for_anthropic() -> None:
    body, _ = rendered(
        ANTHROPIC, request(ANTHROPIC, tools=[WEATHER], toolChoice={"mode": "TOOL_CHOICE_MODE_REQUIRED"})
    )
    assert body["tool_choice"] == {"type": "any"}


def test_thinking_is_turned_off_in_an_anthropic_tool_loop() -> None:
    req = request(
        ANTHROPIC, tools=[WEATHER], reasoning=THINKING, messages=[USER, assistant(call("c1")), result("c1")]
    )
    body, notices = rendered(ANTHROPIC, req)
    assert body["thinking"] == {"type": "disabled"}
    assert notices["thinking_off_in_tool_loop"] == "chat_request.reasoning"


# --- Gemini: no parallel switch --------------------------------------------------------------


def test_gemini_parallel_tool_calls_false_is_not_silently_dropped() -> None:
    req = request(GEMINI, tools=[WEATHER], parallelToolCalls=False)
    body, notices = rendered(GEMINI, req)
    assert "parallel" not in json.dumps(body).lower()
    assert notices == {"parallel_tool_calls_unsupported": "chat_request.parallel_tool_calls"}


async def test_gemini_parallel_notice_reaches_the_wire(server: ServerHandle) -> None:
    client = await server.client()
    reply = await client.render_chat_request(
        provider=GEMINI, chat_request=request(GEMINI, tools=[WEATHER], parallelToolCalls=False)
    )
    assert [(n.code, n.field) for n in reply.notices] == [
        ("parallel_tool_calls_unsupported", "chat_request.parallel_tool_calls")
    ]
    # A request that needs nothing adapted gets no notice.
    plain = await client.render_chat_request(provider=GEMINI, chat_request=request(GEMINI))
    assert list(plain.notices) == []


def test_gemini_tool_names_start_with_a_letter_or_underscore() -> None:
    tool = {**WEATHER, "name": "1weather"}
    assert list(violations(GEMINI, request(GEMINI, tools=[tool]))) == ["chat_request.tools[0].name"]
    rendered(OPENAI_CHAT, request(OPENAI_CHAT, tools=[tool]))


def test_gemini_consecutive_assistant_messages_are_one_model_turn() -> None:
    messages = [
        USER,
        {"role": "CHAT_ROLE_ASSISTANT", "content": "Let me check."},
        assistant(call("c1")),
        result("c1"),
    ]
    body, notices = rendered(GEMINI, request(GEMINI, tools=[WEATHER], messages=messages))
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert notices == {"assistant_messages_merged": "chat_request.messages[2]"}


# --- every provider: tool calls answered, once, by their own tool ----------------------------


@pytest.mark.parametrize("provider", ALL)
@pytest.mark.parametrize("cut", ["before_user", "at_end", "one_of_two"])
def test_an_interrupted_call_gets_a_synthesized_result(provider: int, cut: str) -> None:
    if cut == "before_user":
        messages = [USER, assistant(call("c1")), {"role": "CHAT_ROLE_USER", "content": "Still there?"}]
    elif cut == "at_end":
        messages = [USER, assistant(call("c1"))]
    else:
        messages = [USER, assistant(call("c0"), call("c1")), result("c0")]
    body, notices = rendered(provider, request(provider, tools=[WEATHER], messages=messages))
    assert INTERRUPTED_RESULT in json.dumps(body, ensure_ascii=False)
    assert (
        notices["interrupted_tool_call_answered"]
        == f"chat_request.messages[1].tool_calls[{int(cut == 'one_of_two')}]"
    )


@pytest.mark.parametrize("provider", ALL)
def test_a_call_id_still_open_is_not_used_again(provider: int) -> None:
    messages = [USER, assistant(call("c1"), call("c1")), result("c1"), result("c1")]
    found = violations(provider, request(provider, tools=[WEATHER], messages=messages))
    assert "chat_request.messages[1].tool_calls[1].id" in found


@pytest.mark.parametrize("provider", ALL)
def test_a_call_id_answered_may_be_used_again(provider: int) -> None:
    again = {"role": "CHAT_ROLE_USER", "content": "And in Porto?"}
    messages = [
        USER,
        assistant(call("call_0")),
        result("call_0"),
        again,
        assistant(call("call_0")),
        result("call_0"),
    ]
    body, notices = rendered(provider, request(provider, tools=[WEATHER], messages=messages))
    text = json.dumps(body)
    if not SPECS[provider].unique_call_ids:
        # Gemini pairs a response with the calls of the model turn before it: ids stay as given.
        assert "tool_call_id_rewritten" not in notices
        assert text.count('"call_0"') == 4
    else:
        assert notices["tool_call_id_rewritten"] == "chat_request.messages[4].tool_calls[0].id"
        assert text.count('"call_0"') == 2  # the first call and its result
        # Every round sends the same ids: the rewrite depends on the id and its uses alone.
        assert render(
            provider, request(provider, tools=[WEATHER], messages=messages)
        ).body_json == json.dumps(body, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize("provider", ALL)
def test_a_result_naming_another_tool_is_rejected(provider: int) -> None:
    messages = [USER, assistant(call("c1")), result("c1", name="list_files")]
    found = violations(provider, request(provider, tools=[WEATHER], messages=messages))
    assert list(found) == ["chat_request.messages[2].name"]


@pytest.mark.parametrize("provider", ALL)
def test_a_result_after_a_later_message_is_rejected(provider: int) -> None:
    messages = [USER, assistant(call("c1")), {"role": "CHAT_ROLE_USER", "content": "and?"}, result("c1")]
    found = violations(provider, request(provider, tools=[WEATHER], messages=messages))
    assert "chat_request.messages[3].tool_call_id" in found


@pytest.mark.parametrize("provider", ALL)
def test_whitespace_only_message_is_empty(provider: int) -> None:
    found = violations(provider, request(provider, messages=[{"role": "CHAT_ROLE_USER", "content": " \n "}]))
    assert list(found) == ["chat_request.messages[0].content"]


@pytest.mark.parametrize("provider", [ANTHROPIC, GEMINI])
def test_a_conversation_starting_with_the_assistant_is_rejected_where_documented(provider: int) -> None:
    messages = [{"role": "CHAT_ROLE_ASSISTANT", "content": "Hello"}, USER]
    assert list(violations(provider, request(provider, messages=messages))) == [
        "chat_request.messages[0].role"
    ]


@pytest.mark.parametrize("provider", ALL)
def test_call_names_in_the_history_are_sent_in_the_tool_name_pattern(provider: int) -> None:
    messages = [USER, assistant(call("c1", name="get weather")), result("c1", name="get weather")]
    body, notices = rendered(provider, request(provider, tools=[WEATHER], messages=messages))
    assert "get weather" not in json.dumps(body)
    assert "get_weather" in json.dumps(body)
    assert notices["tool_call_name_rewritten"] == "chat_request.messages[1].tool_calls[0].name"


def test_gemini_keeps_dots_and_colons_in_call_names() -> None:
    messages = [USER, assistant(call("c1", name="ns:get.weather")), result("c1", name="ns:get.weather")]
    body, notices = rendered(GEMINI, request(GEMINI, tools=[WEATHER], messages=messages))
    assert body["contents"][1]["parts"][0]["functionCall"]["name"] == "ns:get.weather"
    assert body["contents"][2]["parts"][0]["functionResponse"]["name"] == "ns:get.weather"
    assert "tool_call_name_rewritten" not in notices


# --- Anthropic and OpenAI adaptations ---------------------------------------------------------


def test_anthropic_call_ids_are_rewritten_consistently() -> None:
    messages = [USER, assistant(call("functions.get_weather:0")), result("functions.get_weather:0")]
    body, notices = rendered(ANTHROPIC, request(ANTHROPIC, tools=[WEATHER], messages=messages))
    use = body["messages"][1]["content"][0]
    answer = body["messages"][2]["content"][0]
    assert use["id"] == answer["tool_use_id"]
    assert use["id"].startswith("functions_get_weather_0_")
    assert notices == {"tool_call_id_rewritten": "chat_request.messages[1].tool_calls[0].id"}


def test_anthropic_declares_history_tools_when_the_round_has_none() -> None:
    messages = [
        USER,
        assistant(call("c1")),
        result("c1"),
        {"role": "CHAT_ROLE_ASSISTANT", "content": "18°C."},
        USER,
    ]
    body, notices = rendered(ANTHROPIC, request(ANTHROPIC, messages=messages))
    assert [t["name"] for t in body["tools"]] == ["get_weather"]
    assert body["tool_choice"] == {"type": "none"}
    assert "tools_declared_for_history" in notices


def test_openai_chat_drops_a_participant_name_it_would_refuse() -> None:
    messages = [{**USER, "name": "Ana Silva"}]
    body, notices = rendered(OPENAI_CHAT, request(OPENAI_CHAT, messages=messages))
    assert "name" not in body["messages"][0]
    assert notices == {"participant_name_dropped": "chat_request.messages[0].name"}


async def test_render_rpc_names_the_field_of_a_rejected_rule(server: ServerHandle) -> None:
    client = await server.client()
    req = request(
        ANTHROPIC, tools=[WEATHER], toolChoice={"mode": "TOOL_CHOICE_MODE_REQUIRED"}, reasoning=THINKING
    )
    failed = await failure(client.render_chat_request(provider=ANTHROPIC, chat_request=req))
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "chat_request.tool_choice.mode" in failed.message


@pytest.mark.parametrize(("case", "provider_name"), rendered_cases())
def test_golden_cases_pass_the_strict_validators(case: str, provider_name: str) -> None:
    provider = PROVIDERS[provider_name]
    conformances()[provider].strict(json.loads(render(provider, build(case, provider)).body_json))
