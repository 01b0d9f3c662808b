"""Call ids as models issue them: unique among the calls open together, repeated across turns.

`call_0` again in the next turn (local OpenAI-compatible servers, open-weight
models, Gemini loops that number their calls) appends through AppendEntries and
PrepareTurn, loads with no repair, and reaches the ChatRequest as it was stored.
"""

from __future__ import annotations

import grpc
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import create_async_engine

from pioneer_grpc.providers.render import render
from pioneer_grpc.store.models import ToolCallRow
from pioneer_grpc.v1 import chat_pb2, history_pb2, turn_service_pb2
from tests.history.rpc import ASSISTANT, TOOL, codes, create, entry, failure, load, tool_call, turn
from tests.history.test_open_counts import MOMENT, _alembic
from tests.history.test_poisoned_threads import PROVIDERS
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
    history = await pg_server.client()
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
        history.append_entries(
            thread_id="t",
            entries=[entry("a9", "turn-9", ASSISTANT, tool_calls=[tool_call("x"), tool_call("x")])],
        )
    )
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [field for field, _ in error.violations] == ["entries[0].tool_calls[1].id"]


async def test_prepare_turn_takes_a_call_id_the_last_turn_used(pg_server):
    history = await pg_server.client()
    c = Client(pg_server)
    await c.thread("t")
    await turn(history, "t", "turn-0", *numbered_turn(0))
    base = {"thread_id": "t", "turn_id": "turn-1", "compile_input": compile_input()}
    first, call, result, _ = numbered_turn(1)
    for e in (first, call, result):
        e.turn_id = ""
    await c.prepare_turn(turn_service_pb2.PrepareTurnRequest(new_entries=[first], **base))
    reply = await c.prepare_turn(turn_service_pb2.PrepareTurnRequest(new_entries=[call, result], **base))
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


async def test_a_history_reusing_call_ids_renders_for_every_provider(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    for n in range(2):
        await turn(history, "t", f"turn-{n}", *numbered_turn(n))
    chat = chat_pb2.ChatRequest(model="m", messages=(await load(history, "t")).messages)
    for provider in PROVIDERS:
        render(provider, chat)


async def test_the_migration_keeps_every_stored_call_and_frees_repeats(empty_database_url):
    engine = create_async_engine(empty_database_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_alembic, "0008_threads_created")
            await conn.execute(
                text(
                    "INSERT INTO threads (thread_id, max_context_tokens, response_reserve_tokens, model, "
                    "summary_model, created_at, updated_at, compaction_strategy) "
                    "VALUES ('t', 1000, 100, '', '', :now, :now, 0)"
                ),
                {"now": MOMENT},
            )
            calls = [{"c": "call_0", "e": "a1"}, {"c": "call_1", "e": "a1"}, {"c": "call_2", "e": "a2"}]
            insert_call = text("INSERT INTO tool_calls (thread_id, call_id, entry_id) VALUES ('t', :c, :e)")
            await conn.execute(insert_call, calls)
            await conn.run_sync(_alembic, "0009_call_ids_per_turn")
            # The same id made by another entry (the next turn's call_0) is a row of its own now.
            await conn.execute(insert_call, {"c": "call_0", "e": "a3"})
            found = (
                await conn.execute(
                    select(ToolCallRow.call_id, ToolCallRow.entry_id).order_by(
                        ToolCallRow.entry_id, ToolCallRow.call_id
                    )
                )
            ).all()
            await conn.run_sync(_alembic, "head")
        assert [tuple(row) for row in found] == [
            ("call_0", "a1"),
            ("call_1", "a1"),
            ("call_2", "a2"),
            ("call_0", "a3"),
        ]
    finally:
        await engine.dispose()
