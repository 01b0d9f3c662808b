"""The thread's open counts (entries of turns not completed, and their turns) and its completed count
always match its rows.

Appends, rounds and completions keep them in their own transactions (migrations
0006, 0011); a load reads them to say what it leaves out. Every step below compares the
thread row, and the load's diagnostic for several excluded turns, with a count of
the rows themselves, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import grpc
import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import create_async_engine

from pioneer_grpc.client import RpcFailure, user_entry
from pioneer_grpc.store.migrate import MIGRATIONS
from pioneer_grpc.store.models import EntryRow, ThreadRow
from pioneer_grpc.v1 import common_pb2, history_pb2, turn_service_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb
from tests.turn.test_prepare_turn import Client, compile_input

THREAD = "t-open"
MOMENT = datetime(2026, 11, 30, tzinfo=UTC)
LEFT_OUT = re.compile(r"(\d+) (?:entry|entries) of (\d+) turns? not completed")


def entry(entry_id: str, turn_id: str, **fields) -> history_pb2.ConversationEntry:
    fields.setdefault("role", history_pb2.ENTRY_ROLE_USER)
    fields.setdefault("content", entry_id)
    return history_pb2.ConversationEntry(entry_id=entry_id, turn_id=turn_id, **fields)


async def counted(server, exclude: str = "") -> tuple[int, int]:
    """(entries, turns) not completed, but `exclude`'s, counted from the rows."""
    query = select(func.count(), func.count(EntryRow.turn_id.distinct())).where(
        EntryRow.thread_id == THREAD, EntryRow.completed.is_(False), EntryRow.turn_id != exclude
    )
    async with server.ctx.store.engine.connect() as conn:
        entries, turns = (await conn.execute(query)).one()
    return int(entries), int(turns)


async def kept(server) -> tuple[int, int]:
    async with server.ctx.store.engine.connect() as conn:
        row = (
            await conn.execute(
                select(ThreadRow.open_entries, ThreadRow.open_turns).where(ThreadRow.thread_id == THREAD)
            )
        ).one()
    return int(row.open_entries), int(row.open_turns)


async def said(c: Client, exclude: str) -> tuple[int, int]:
    """What LoadConversationHistory says it leaves out ((0, 0) when it says nothing)."""
    reply = await c.load_conversation_history(
        pb.LoadConversationHistoryRequest(thread_id=THREAD, exclude_turn_id=exclude)
    )
    found = [d for d in reply.report.diagnostics if d.code == "incomplete_turns_left_out"]
    if not found:
        return 0, 0
    [diagnostic] = found
    match = LEFT_OUT.match(diagnostic.message)
    assert match, diagnostic.message
    return int(match[1]), int(match[2])


async def completed_counts(server) -> tuple[int, int]:
    """(the thread row's completed count, its completed entries counted from the rows)."""
    kept_count = select(ThreadRow.completed_entries).where(ThreadRow.thread_id == THREAD).scalar_subquery()
    rows = select(func.count()).where(EntryRow.thread_id == THREAD, EntryRow.completed.is_(True))
    async with server.ctx.store.engine.connect() as conn:
        row = (await conn.execute(select(kept_count, rows.scalar_subquery()))).one()
    return int(row[0]), int(row[1])


async def check(server, c: Client) -> None:
    assert await kept(server) == await counted(server)
    kept_completed, completed_rows = await completed_counts(server)
    assert kept_completed == completed_rows
    for exclude in ("", "a", "b", "c", "e", "nobody"):
        assert await said(c, exclude) == await counted(server, exclude), exclude


async def prepare(c: Client, turn_id: str, *entries: history_pb2.ConversationEntry) -> None:
    await c.prepare_turn(
        turn_service_pb2.PrepareTurnRequest(
            thread_id=THREAD, turn_id=turn_id, new_entries=entries, compile_input=compile_input()
        )
    )


async def append(c: Client, *entries: history_pb2.ConversationEntry) -> None:
    await c.append_entries(pb.AppendEntriesRequest(thread_id=THREAD, entries=entries))


async def complete(c: Client, turn_id: str) -> None:
    await c.complete_turn(pb.CompleteTurnRequest(thread_id=THREAD, turn_id=turn_id))


async def test_open_counts_follow_appends_rounds_and_completions(pg_server):
    c = Client(pg_server)
    await c.thread(THREAD)
    await check(pg_server, c)
    batch = (entry("a1", "a"), entry("a2", "a"), entry("b1", "b"))
    await append(c, *batch)
    await check(pg_server, c)
    await append(c, *batch)  # a repeat stores nothing
    await check(pg_server, c)
    with pytest.raises(RpcFailure) as refused:
        # A result answering no call: the whole batch is refused, its new entry too.
        await append(c, entry("b2", "b"), entry("b3", "b", role=3, tool_call_id="nope", name="read_file"))
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    await check(pg_server, c)
    await prepare(c, "c", user_entry("c1", "first of c"))  # a new turn, by a round
    await check(pg_server, c)
    await prepare(c, "a", user_entry("a3", "more of a"))  # an open turn grows
    await prepare(c, "a", user_entry("a3", "more of a"))  # a retried round
    await check(pg_server, c)
    await prepare(c, "e")  # a turn with no entries is not open...
    await check(pg_server, c)
    call = common_pb2.ToolCall(id="k1", name="read_file", arguments="{}")
    await append(c, entry("e1", "e", role=history_pb2.ENTRY_ROLE_ASSISTANT, content="", tool_calls=[call]))
    await check(pg_server, c)  # ...until its first entry
    await complete(c, "a")
    await check(pg_server, c)
    await complete(c, "a")  # completing again changes nothing
    await check(pg_server, c)
    await prepare(c, "f")
    await complete(c, "f")  # a turn completed without entries
    await check(pg_server, c)
    with pytest.raises(RpcFailure) as late:
        await prepare(c, "a", user_entry("a4", "too late"))
    assert late.value.code == grpc.StatusCode.FAILED_PRECONDITION
    for turn_id in ("b", "c", "e"):
        await complete(c, turn_id)
        await check(pg_server, c)
    assert await kept(pg_server) == (0, 0)
    assert await completed_counts(pg_server) == (6, 6)


async def complete_with(c: Client, turn_id: str, *entries: history_pb2.ConversationEntry) -> tuple[int, ...]:
    reply = await c.complete_turn(pb.CompleteTurnRequest(thread_id=THREAD, turn_id=turn_id, entries=entries))
    return reply.completed_entry_count, reply.created_count, reply.existing_count


async def test_open_counts_follow_completions_that_carry_entries(pg_server):
    """CompleteTurn carrying the answer stores it and completes the turn in one transaction (on
    PostgreSQL in the statement that inserts it, when it can): the counts match the rows after
    each, whatever the turn held before."""
    c = Client(pg_server)
    await c.thread(THREAD)
    answer = entry("a3", "a", role=history_pb2.ENTRY_ROLE_ASSISTANT)
    await append(c, entry("a1", "a"), entry("a2", "a"))
    assert await complete_with(c, "a", answer) == (3, 1, 0)  # a turn with entries, and its answer
    await check(pg_server, c)
    assert await complete_with(c, "a", answer) == (3, 0, 1)  # retried: nothing changes
    await check(pg_server, c)
    assert await complete_with(c, "b", entry("b1", "b")) == (1, 1, 0)  # a new turn, its one entry
    await check(pg_server, c)
    await prepare(c, "e")  # a turn without entries until its answer
    assert await complete_with(c, "e", entry("e1", "e")) == (1, 1, 0)
    await check(pg_server, c)
    await append(c, entry("c1", "c"))
    assert await complete_with(c, "c", entry("c1", "c")) == (1, 0, 1)  # every entry stored already
    await check(pg_server, c)
    with pytest.raises(RpcFailure) as late:
        await complete_with(c, "a", entry("a4", "a"))
    assert late.value.code == grpc.StatusCode.FAILED_PRECONDITION
    await check(pg_server, c)
    assert await kept(pg_server) == (0, 0)
    assert await completed_counts(pg_server) == (6, 6)


def _alembic(connection, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


async def test_the_migration_counts_what_a_thread_already_has_open(empty_database_url):
    engine = create_async_engine(empty_database_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_alembic, "0005")
            await conn.execute(
                text(
                    "INSERT INTO threads (thread_id, max_context_tokens, response_reserve_tokens, model, "
                    "summary_model, created_at, updated_at, compaction_strategy) "
                    "VALUES (:t, 1000, 100, '', '', :now, :now, 0)"
                ),
                [{"t": t, "now": MOMENT} for t in ("busy", "idle")],
            )
            rows = [("busy", "x1", "x", False), ("busy", "x2", "x", False), ("busy", "y1", "y", False)]
            rows += [("busy", "z1", "z", True), ("idle", "w1", "w", True)]
            await conn.execute(
                text(
                    "INSERT INTO conversation_entries (thread_id, entry_id, turn_id, role, content, "
                    "tool_calls_json, tool_call_id, name, artifact_refs_json, content_hash, token_count, "
                    "tokenizer, completed, created_at) "
                    "VALUES (:t, :e, :u, 1, 'x', '[]', '', '', '[]', 'h', 1, 'cl100k_base', :done, :now)"
                ),
                [{"t": t, "e": e, "u": u, "done": done, "now": MOMENT} for t, e, u, done in rows],
            )
            await conn.run_sync(_alembic, "head")
            found = (
                await conn.execute(
                    select(
                        ThreadRow.thread_id,
                        ThreadRow.open_entries,
                        ThreadRow.open_turns,
                        ThreadRow.completed_entries,
                    ).order_by(ThreadRow.thread_id)
                )
            ).all()
        assert [tuple(row) for row in found] == [("busy", 3, 2, 1), ("idle", 0, 0, 1)]
    finally:
        await engine.dispose()
