"""PrepareTurn applies the provider rules: a refused round stores nothing, an adapted one says so."""

from __future__ import annotations

import json

import grpc
import pytest

from pioneer_grpc.client import RpcFailure, user_entry
from pioneer_grpc.v1 import chat_pb2, history_pb2, provider_service_pb2, turn_service_pb2
from tests.turn.test_prepare_turn import Client, bad_fields, compile_input, weather_tool

P = provider_service_pb2


def _forced_tool_with_thinking(thread_id: str, provider: int) -> turn_service_pb2.PrepareTurnRequest:
    """A round that forces a tool call with thinking on: Anthropic refuses the pair, OpenAI does not."""
    return turn_service_pb2.PrepareTurnRequest(
        thread_id=thread_id,
        turn_id="turn-1",
        new_entries=[user_entry("u1", "Weather in Oslo?")],
        compile_input=compile_input(),
        tools=[weather_tool()],
        tool_choice=chat_pb2.ToolChoice(mode=chat_pb2.TOOL_CHOICE_MODE_REQUIRED),
        reasoning=chat_pb2.Reasoning(effort=chat_pb2.REASONING_EFFORT_LOW),
        provider=provider,
    )


async def test_anthropic_forced_tool_choice_with_thinking_is_refused_before_anything_is_stored(server):
    c = Client(server)
    await c.thread("t-think")
    request = _forced_tool_with_thinking("t-think", P.PROVIDER_ANTHROPIC_MESSAGES)
    with pytest.raises(RpcFailure) as info:
        await c.prepare_turn(request)
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert bad_fields(info.value) == ["tool_choice.mode"]
    assert await c.entry_count("t-think") == 0
    request.tool_choice.mode = chat_pb2.TOOL_CHOICE_MODE_AUTO
    reply = await c.prepare_turn(request)
    assert json.loads(reply.provider_body_json)["thinking"]["type"] == "enabled"


async def test_gemini_parallel_false_comes_back_as_a_notice_on_the_request_field(server):
    c = Client(server)
    await c.thread("t-gemini", model="gemini-2.5-flash")
    reply = await c.prepare_turn(
        turn_service_pb2.PrepareTurnRequest(
            thread_id="t-gemini",
            turn_id="turn-1",
            new_entries=[user_entry("u1", "Weather in Oslo and Bergen?")],
            compile_input=compile_input(),
            tools=[weather_tool()],
            parallel_tool_calls=False,
            provider=P.PROVIDER_GEMINI_GENERATE_CONTENT,
        )
    )
    assert [(n.code, n.field) for n in reply.provider_notices] == [
        ("parallel_tool_calls_unsupported", "parallel_tool_calls")
    ]
    body = json.loads(reply.provider_body_json)
    assert set(body) == {"systemInstruction", "contents", "tools"}
    assert reply.history_report.decision == history_pb2.HISTORY_DECISION_FULL


async def test_a_head_that_passed_for_one_provider_is_checked_again_for_another(server):
    """Tools and options that passed once are not checked again, but only for the same provider."""
    c = Client(server)
    await c.thread("t-again")
    request = _forced_tool_with_thinking("t-again", P.PROVIDER_OPENAI_CHAT_COMPLETIONS)
    await c.prepare_turn(request)
    await c.prepare_turn(request)  # the same head, now remembered clean
    request.turn_id = "turn-2"
    request.new_entries[0].entry_id = "u2"
    request.provider = P.PROVIDER_ANTHROPIC_MESSAGES
    for _ in range(2):  # a refused head is not remembered either
        with pytest.raises(RpcFailure) as info:
            await c.prepare_turn(request)
        assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert bad_fields(info.value) == ["tool_choice.mode"]
    assert await c.entry_count("t-again") == 1
    # The head clean for OpenAI again, with a new entry that breaks its own rules: still refused.
    request.provider = P.PROVIDER_OPENAI_CHAT_COMPLETIONS
    request.new_entries[0].ClearField("content")
    with pytest.raises(RpcFailure) as info:
        await c.prepare_turn(request)
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert await c.entry_count("t-again") == 1
