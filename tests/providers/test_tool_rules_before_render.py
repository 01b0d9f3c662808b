"""The tool rules a turn checks before it renders (named under the caller's path, by the provider's
rules), and the messages that say why call arguments cannot go as a JSON value."""

from __future__ import annotations

import pytest
from google.protobuf import json_format

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.providers import render
from pioneer_grpc.providers.validate import tool_rule_violations
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.cases import MODELS, WEATHER

P = provider_service_pb2


def request(provider: int, **fields: object) -> chat_pb2.ChatRequest:
    d = {"model": MODELS[provider], "messages": [{"role": "CHAT_ROLE_USER", "content": "hi"}], **fields}
    return json_format.ParseDict(d, chat_pb2.ChatRequest())


BROKEN = {
    "tools": [dict(WEATHER, name="web.search")],
    "toolChoice": {"mode": "TOOL_CHOICE_MODE_TOOL", "toolName": "nope"},
    "reasoning": {"budgetTokens": 2048},
}


def test_each_provider_checks_its_own_tool_rules_under_the_callers_path():
    found = {
        provider: [
            (v.field, v.description)
            for v in tool_rule_violations(provider, request(provider, **BROKEN), "turn.chat")
        ]
        for provider in (
            P.PROVIDER_OPENAI_CHAT_COMPLETIONS,
            P.PROVIDER_ANTHROPIC_MESSAGES,
            P.PROVIDER_GEMINI_GENERATE_CONTENT,
        )
    }
    unknown_tool = ("turn.chat.tool_choice.tool_name", "no tool named 'nope' in tools")
    assert found[P.PROVIDER_OPENAI_CHAT_COMPLETIONS] == [
        ("turn.chat.tools[0].name", "may contain only [A-Za-z0-9_-] for openai-chat"),
        unknown_tool,
    ]
    assert found[P.PROVIDER_ANTHROPIC_MESSAGES] == [
        ("turn.chat.tools[0].name", "may contain only [A-Za-z0-9_-] for anthropic"),
        unknown_tool,
        (
            "turn.chat.tool_choice.mode",
            "Anthropic allows only auto or none with extended thinking: turn reasoning off "
            "(reasoning.disabled) or let the model choose",
        ),
    ]
    # Gemini takes dots in tool names.
    assert found[P.PROVIDER_GEMINI_GENERATE_CONTENT] == [unknown_tool]
    assert tool_rule_violations(P.PROVIDER_ANTHROPIC_MESSAGES, request(P.PROVIDER_ANTHROPIC_MESSAGES)) == []
    default_path = tool_rule_violations(P.PROVIDER_OPENAI_CHAT_COMPLETIONS, request(1, **BROKEN))
    assert default_path[0].field == "chat_request.tools[0].name"


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ('{"x": NaN}', "NaN is not a JSON number"),
        ('{"x": -Infinity}', "-Infinity is not a JSON number"),
        ('{"x": 1e999}', "1e999 is out of a double's range"),
        ('{"x": 1' + "0" * 60 + "e999}", "1" + "0" * 39 + " is out of a double's range"),
    ],
)
def test_arguments_sent_as_a_json_value_say_why_they_are_refused(arguments: str, why: str):
    provider = P.PROVIDER_ANTHROPIC_MESSAGES
    req = request(
        provider,
        tools=[WEATHER],
        messages=[
            {"role": "CHAT_ROLE_USER", "content": "hi"},
            {
                "role": "CHAT_ROLE_ASSISTANT",
                "toolCalls": [{"id": "c1", "name": "get_weather", "arguments": arguments}],
            },
            {"role": "CHAT_ROLE_TOOL", "toolCallId": "c1", "content": "ok"},
        ],
    )
    with pytest.raises(InvalidArgument) as refused:
        render(provider, req)
    assert [(v.field, v.description) for v in refused.value.violations] == [
        ("chat_request.messages[1].tool_calls[0].arguments", f"arguments are not valid JSON: {why}")
    ]
