"""The model registry decides what each model takes: left out with a notice, or refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.protobuf import json_format

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.providers import render
from pioneer_grpc.providers.validate import tool_rule_violations
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.cases import WEATHER
from tests.providers.conformance import conformances

P = provider_service_pb2
CHAT, RESPONSES = P.PROVIDER_OPENAI_CHAT_COMPLETIONS, P.PROVIDER_OPENAI_RESPONSES
ANTHROPIC, GEMINI = P.PROVIDER_ANTHROPIC_MESSAGES, P.PROVIDER_GEMINI_GENERATE_CONTENT
USER = {"role": "CHAT_ROLE_USER", "content": "Weather in Lisbon?"}
IMAGE = {"image": {"data": "iVBORw0KGgo=", "mimeType": "image/png"}}


def request(model: str, **fields: Any) -> chat_pb2.ChatRequest:
    return json_format.ParseDict({"model": model, "messages": [USER], **fields}, chat_pb2.ChatRequest())


def rendered(provider: int, req: chat_pb2.ChatRequest) -> tuple[dict[str, Any], dict[str, str]]:
    out = render(provider, req)  # type: ignore[arg-type]
    body = json.loads(out.body_json)
    conformances()[provider].strict(body)
    return body, {n.code: n.field for n in out.notices}


@pytest.mark.parametrize("provider", [CHAT, RESPONSES])
@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4.1", "gpt-4o-mini-2024-07-18"])
def test_no_reasoning_effort_to_openai_models_without_reasoning(provider: int, model: str) -> None:
    body, notices = rendered(provider, request(model, reasoning={"effort": "REASONING_EFFORT_HIGH"}))
    assert "reasoning_effort" not in body
    assert "reasoning" not in body
    assert notices == {"reasoning_not_sent": "chat_request.reasoning"}


@pytest.mark.parametrize("provider", [CHAT, RESPONSES])
def test_reasoning_models_still_get_their_effort(provider: int) -> None:
    body, notices = rendered(provider, request("o3", reasoning={"effort": "REASONING_EFFORT_HIGH"}))
    assert body.get("reasoning_effort") == "high" or body.get("reasoning") == {"effort": "high"}
    assert notices == {}


@pytest.mark.parametrize("provider", [CHAT, RESPONSES])
@pytest.mark.parametrize("model", ["o3", "o4-mini", "gpt-5"])
def test_no_temperature_to_openai_reasoning_models(provider: int, model: str) -> None:
    body, notices = rendered(provider, request(model, temperature=0.4))
    assert "temperature" not in body
    assert notices == {"temperature_not_sent": "chat_request.temperature"}
    body, notices = rendered(provider, request("gpt-4.1", temperature=0.4))
    assert body["temperature"] == 0.4
    assert notices == {}


def test_no_thinking_to_claude_3_haiku() -> None:
    req = request("claude-3-haiku-20240307", reasoning={"effort": "REASONING_EFFORT_LOW"})
    body, notices = rendered(ANTHROPIC, req)
    assert "thinking" not in body
    assert body["max_tokens"] == 4096
    assert notices == {"reasoning_not_sent": "chat_request.reasoning"}
    # With thinking left out, a forced tool choice is no longer refused.
    req = request("claude-3-haiku-20240307", reasoning={"effort": "REASONING_EFFORT_LOW"}, tools=[WEATHER])
    req.tool_choice.mode = chat_pb2.TOOL_CHOICE_MODE_REQUIRED
    body, _ = rendered(ANTHROPIC, req)
    assert body["tool_choice"] == {"type": "any"}


@pytest.mark.parametrize("reasoning", [{"effort": "REASONING_EFFORT_LOW"}, {"disabled": True}])
def test_no_thinking_config_to_gemini_2_0_flash(reasoning: dict[str, Any]) -> None:
    body, notices = rendered(GEMINI, request("gemini-2.0-flash", reasoning=reasoning))
    assert "generationConfig" not in body
    assert notices == {"reasoning_not_sent": "chat_request.reasoning"}


@pytest.mark.parametrize("provider", [CHAT, RESPONSES])
def test_an_openai_thinking_budget_is_named_when_left_out(provider: int) -> None:
    body, notices = rendered(provider, request("o3", reasoning={"budgetTokens": 5000}))
    assert "reasoning" not in body
    assert "reasoning_effort" not in body
    assert notices == {"thinking_budget_not_sent": "chat_request.reasoning.budget_tokens"}
    both = request("o3", reasoning={"budgetTokens": 5000, "effort": "REASONING_EFFORT_LOW"})
    body, notices = rendered(provider, both)
    assert "low" in json.dumps(body)
    assert "5000" not in json.dumps(body)
    assert "its effort was sent" in render(provider, both).notices[0].message  # type: ignore[arg-type]


@pytest.mark.parametrize("provider", [ANTHROPIC, GEMINI])
def test_a_model_of_another_family_is_named(provider: int) -> None:
    _, notices = rendered(provider, request("gpt-4.1-mini"))
    assert notices == {"model_family_mismatch": "chat_request.model"}


@pytest.mark.parametrize("provider", [CHAT, RESPONSES, ANTHROPIC, GEMINI])
def test_an_unknown_model_is_named_with_its_assumed_window(provider: int) -> None:
    out = render(provider, request("house-model-7", temperature=0.5))  # type: ignore[arg-type]
    assert [(n.code, n.field) for n in out.notices if n.code != "temperature_not_sent"] == [
        ("unknown_model", "chat_request.model")
    ]
    assert "128,000" in out.notices[0].message


@pytest.mark.parametrize("mode", ["TOOL_CHOICE_MODE_REQUIRED", "TOOL_CHOICE_MODE_TOOL"])
@pytest.mark.parametrize("model", ["claude-opus-5-5", "claude-sonnet-5-5-20270101", "claude-mythos-5-1"])
def test_forced_tool_choice_is_refused_where_the_model_family_refuses_it(model: str, mode: str) -> None:
    choice = {"mode": mode, "toolName": "get_weather" if mode.endswith("TOOL") else ""}
    req = request(model, tools=[WEATHER], toolChoice=choice, reasoning={"disabled": True})
    with pytest.raises(InvalidArgument) as info:
        render(ANTHROPIC, req)
    assert [v.field for v in info.value.violations] == ["chat_request.tool_choice.mode"]
    assert [v.field for v in tool_rule_violations(ANTHROPIC, req)] == ["chat_request.tool_choice.mode"]
    req.tool_choice.mode = chat_pb2.TOOL_CHOICE_MODE_AUTO
    req.tool_choice.tool_name = ""
    assert render(ANTHROPIC, req).body_json


def test_tools_on_chat_completions_are_refused_where_the_model_takes_them_on_responses_only() -> None:
    req = request("gpt-6-astra", tools=[WEATHER])
    with pytest.raises(InvalidArgument) as info:
        render(CHAT, req)
    assert [v.field for v in info.value.violations] == ["chat_request.tools"]
    assert json.loads(render(RESPONSES, req).body_json)["tools"][0]["name"] == "get_weather"


@pytest.mark.parametrize("provider", [CHAT, RESPONSES])
def test_media_a_model_does_not_read_is_a_line_of_text(provider: int) -> None:
    req = request("gpt-4-0613", messages=[{**USER, "contentParts": [IMAGE]}])
    body, notices = rendered(provider, req)
    text = json.dumps(body)
    assert "iVBOR" not in text
    assert "not sent: gpt-4-0613 does not read image parts" in text
    assert notices == {"media_not_sent": "chat_request.messages[0].content_parts[0].image"}
    body, notices = rendered(provider, request("gpt-4o", messages=[{**USER, "contentParts": [IMAGE]}]))
    assert "iVBOR" in json.dumps(body)
    assert notices == {}
