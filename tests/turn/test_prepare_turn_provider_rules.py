"""PrepareTurn applies the provider rules: a refused round stores nothing, an adapted one says so."""

from __future__ import annotations

import base64
import json

import grpc
import pytest

from pioneer_grpc.client import RpcFailure, user_entry
from pioneer_grpc.v1 import chat_pb2, history_pb2, history_service_pb2, provider_service_pb2, turn_service_pb2
from tests.builders import ASSISTANT, TOOL, entry, tool_call
from tests.history.test_entry_media import SCREENSHOT, image
from tests.providers.conformance import conformances
from tests.turn.test_prefix_after_completed_turn import Renders
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


def _screenshot_turn(turn_id: str) -> list[history_pb2.ConversationEntry]:
    """A turn's entries after its user message: a screenshot call, its result with an image and
    a PDF, and the answer."""
    pdf = chat_pb2.MediaPart(mime_type="application/pdf", filename="invoice.pdf", data=b"%PDF-1.4 invoice")
    call = f"{turn_id}-call"
    return [
        entry(f"{turn_id}-a", turn_id, ASSISTANT, "Looking.", tool_calls=[tool_call(call, "screenshot")]),
        entry(
            f"{turn_id}-r",
            turn_id,
            TOOL,
            "Tab 1:",
            tool_call_id=call,
            name="screenshot",
            content_parts=[image(), chat_pb2.ContentPart(file=pdf)],
        ),
        entry(f"{turn_id}-f", turn_id, ASSISTANT, "The invoice is open."),
    ]


@pytest.mark.parametrize(
    ("model", "code"),
    [
        # Reads neither: a line of text stands for each in the result.
        ("gpt-4-0613", "media_not_sent"),
        # Reads both: Chat Completions takes neither in a tool message, so they follow the results.
        ("gpt-5", "tool_result_media_moved"),
    ],
)
async def test_media_in_tool_results_gets_one_notice_each_after_a_kept_prefix_as_from_scratch(
    database_url, server_factory, monkeypatch, model, code
):
    """Each turn: a round with the user's message, a round with the call and its result (after the
    history's prefix kept from the round before), the answer; on a server that keeps the history's
    rendered prefix and on one that renders every round from scratch."""
    renders = Renders(monkeypatch)
    one = await server_factory(database_url=database_url)
    other = await server_factory(database_url=database_url)
    mine, theirs = Client(one), Client(other)
    # A window wide enough for every turn (gpt-4-0613 has 8,192 tokens): the history stays whole.
    await mine.thread("t-media", model=model, max_context_tokens=400_000, response_reserve_tokens=16_000)
    for i in range(3):
        turn_id = f"turn-{i}"
        call, result, answer = _screenshot_turn(turn_id)
        for results, entries in ((i, [user_entry(f"u{i}", "Open the invoice.")]), (i + 1, [call, result])):
            round_ = turn_service_pb2.PrepareTurnRequest(
                thread_id="t-media",
                turn_id=turn_id,
                new_entries=entries,
                compile_input=compile_input(),
                tools=[weather_tool()],
                provider=P.PROVIDER_OPENAI_CHAT_COMPLETIONS,
            )
            reply = await mine.prepare_turn(round_)
            # The history (4 messages a turn before this one) is rendered once, on its first round:
            # whole while there was no prefix to extend, then extended by the turn completed since.
            first = [("whole", 4 * i)] if i < 2 else [("extended", 4)]
            assert renders.taken() == (first if results == i else [])
            # Each result with media (one a turn so far) is message 2 of its turn's messages.
            parts = [
                f"chat_request.messages[{4 * j + 2}].content_parts[{k}].{kind}"
                for j in range(results)
                for k, kind in ((0, "image"), (1, "file"))
            ]
            assert [(n.code, n.field) for n in reply.provider_notices] == [(code, field) for field in parts]
            body = reply.provider_body_json
            conformances()[P.PROVIDER_OPENAI_CHAT_COMPLETIONS].sdk_types(json.loads(body), model)
            sent = base64.b64encode(SCREENSHOT).decode() in body
            assert sent == (results > 0 and code != "media_not_sent")
            # The same round on a server that keeps nothing: from scratch, the same body and notices.
            other.ctx.load_cache.clear()
            again = await theirs.prepare_turn(round_)
            assert renders.taken() == [("whole", 4 * i)]
            assert again.provider_body_json == body
            assert list(again.provider_notices) == list(reply.provider_notices)
        await mine.append_entries(
            history_service_pb2.AppendEntriesRequest(thread_id="t-media", entries=[answer])
        )
        await mine.complete_turn(
            history_service_pb2.CompleteTurnRequest(thread_id="t-media", turn_id=turn_id)
        )


BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


async def test_a_bedrock_round_that_asks_no_reasoning_gets_no_reasoning_notice(server):
    c = Client(server)
    await c.thread("t-bedrock", model=BEDROCK_MODEL)
    reply = await c.prepare_turn(
        turn_service_pb2.PrepareTurnRequest(
            thread_id="t-bedrock",
            turn_id="turn-1",
            new_entries=[user_entry("u1", "Weather in Oslo?")],
            compile_input=compile_input(),
            tools=[weather_tool()],
            provider=P.PROVIDER_AMAZON_BEDROCK_CONVERSE,
        )
    )
    assert [(n.code, n.field) for n in reply.provider_notices] == []
    assert "toolConfig" in json.loads(reply.provider_body_json)


async def test_bedrock_tool_choice_none_after_a_tool_call_is_refused_and_stores_nothing(server):
    """A loop that uses none to force the final answer: Converse cannot forbid a call (its tools must be
    declared for the calls in the history), so the round is refused rather than left callable."""
    c = Client(server)
    await c.thread("t-none", model=BEDROCK_MODEL)
    request = turn_service_pb2.PrepareTurnRequest(
        thread_id="t-none",
        turn_id="turn-1",
        new_entries=[
            user_entry("u1", "Weather in Oslo?"),
            entry("a1", role=ASSISTANT, content="", tool_calls=[tool_call("call_0", "get_weather")]),
            entry("r1", role=TOOL, content="12 C", tool_call_id="call_0", name="get_weather"),
        ],
        compile_input=compile_input(),
        tools=[weather_tool()],
        tool_choice=chat_pb2.ToolChoice(mode=chat_pb2.TOOL_CHOICE_MODE_NONE),
        provider=P.PROVIDER_AMAZON_BEDROCK_CONVERSE,
    )
    with pytest.raises(RpcFailure) as info:
        await c.prepare_turn(request)
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert bad_fields(info.value) == ["tool_choice.mode"]
    assert await c.entry_count("t-none") == 0
    request.tool_choice.mode = chat_pb2.TOOL_CHOICE_MODE_AUTO
    reply = await c.prepare_turn(request)
    assert json.loads(reply.provider_body_json)["toolConfig"]["toolChoice"] == {"auto": {}}
