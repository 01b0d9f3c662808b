"""Call ids as models issue them: unique among the calls open together, repeated across turns.

`call_0` again in the next turn (local OpenAI-compatible servers, open-weight
models, Gemini loops that number their calls) appends through AppendEntries and
PrepareTurn, loads with no repair, and reaches the ChatRequest as it was stored.
"""

from __future__ import annotations

import grpc
import pytest

from pioneer_grpc.providers.render import render
from pioneer_grpc.v1 import chat_pb2, history_pb2, turn_service_pb2
from tests.history.rpc import ASSISTANT, TOOL, codes, create, entry, failure, load, stub, tool_call, turn
from tests.history.test_poisoned_threads import PROVIDERS, append
from tests.turn.test_prepare_turn import Client, compile_input


def numbered_turn(n: int) -> list[history_pb2.ConversationEntry]:
    """A turn whose one call is `call_0`, like every other turn's."""
    turn_id = f"turn-{n}"
    return [
        entry(f"u{n}", turn_id),
        entry(f"a{n}", turn_id, ASSISTANT, tool_calls=[tool_call("call_0", "read_file")]),
        entry(f"r{n}", turn_id, TOOL, content=f"result {n}", tool_call_id="call_0", name="read_file"),
        entry(f"f{n}", turn_id, ASSISTANT, content=f"answer {n}"),
    ]


async def test_turns_reusing_a_call_id_append_and_load_as_stored(pg_server):
    history = stub(pg_server)
    await create(history, "t")
    for n in range(3):
        await turn(history, "t", f"turn-{n}", *numbered_turn(n))
    response = await load(history, "t")
    assert codes(response) == []
    calls = [m.tool_calls[0].id for m in response.messages if m.tool_calls]
    results = [(m.tool_call_id, m.content) for m in response.messages if m.role == chat_pb2.CHAT_ROLE_TOOL]
    assert calls == ["call_0", "call_0", "call_0"]
    assert results == [("call_0", "result 0"), ("call_0", "result 1"), ("call_0", "result 2")]
    # Within one entry the calls are open together: their ids must still differ.
    error = await failure(
        append(history, "t", entry("a9", "turn-9", ASSISTANT, tool_calls=[tool_call("x"), tool_call("x")]))
    )
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [field for field, _ in error.violations] == ["entries[0].tool_calls[1].id"]


async def test_prepare_turn_takes_a_call_id_the_last_turn_used(pg_server):
    history = stub(pg_server)
    c = Client(pg_server)
    await c.thread("t")
    await turn(history, "t", "turn-0", *numbered_turn(0))
    base = {"thread_id": "t", "turn_id": "turn-1", "compile_input": compile_input()}
    first, call, result, _ = numbered_turn(1)
    for e in (first, call, result):
        e.turn_id = ""
    await c.turns.PrepareTurn(turn_service_pb2.PrepareTurnRequest(new_entries=[first], **base))
    reply = await c.turns.PrepareTurn(turn_service_pb2.PrepareTurnRequest(new_entries=[call, result], **base))
    messages = reply.chat_request.messages
    assert [(m.role, [c.id for c in m.tool_calls], m.tool_call_id) for m in messages] == [
        (chat_pb2.CHAT_ROLE_USER, [], ""),
        (chat_pb2.CHAT_ROLE_ASSISTANT, ["call_0"], ""),
        (chat_pb2.CHAT_ROLE_TOOL, [], "call_0"),
        (chat_pb2.CHAT_ROLE_ASSISTANT, [], ""),
        (chat_pb2.CHAT_ROLE_USER, [], ""),
        (chat_pb2.CHAT_ROLE_ASSISTANT, ["call_0"], ""),
        (chat_pb2.CHAT_ROLE_TOOL, [], "call_0"),
    ]
    assert list(reply.history_report.diagnostics) == []
    assert await c.entry_count("t") == 7


@pytest.mark.xfail(
    strict=True,
    reason="the provider renderers refuse a call id repeated in the conversation until they rewrite it",
)
async def test_a_history_reusing_call_ids_renders_for_every_provider(pg_server):
    history = stub(pg_server)
    await create(history, "t")
    for n in range(2):
        await turn(history, "t", f"turn-{n}", *numbered_turn(n))
    chat = chat_pb2.ChatRequest(model="m", messages=(await load(history, "t")).messages)
    for provider in PROVIDERS:
        render(provider, chat)
