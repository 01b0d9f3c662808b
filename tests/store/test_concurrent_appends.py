"""20 writers appending overlapping batches at once: nothing lost, nothing doubled."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import func, select

from pioneer_grpc.errors import AlreadyExists
from pioneer_grpc.service import history as history_ops
from pioneer_grpc.store.models import EntryRow, ThreadRow, TurnRow
from pioneer_grpc.v1 import history_pb2
from tests.builders import entry

ASSISTANT = history_pb2.ENTRY_ROLE_ASSISTANT

WRITERS = 20
SHARED = 5
OWN = 5


async def test_twenty_concurrent_writers(pg_server):
    ctx = pg_server.ctx
    await history_ops.create_thread(ctx, "t", history_pb2.ThreadConfig())
    shared = [entry(f"shared-{i}", "turn-shared") for i in range(SHARED)]

    async def writer(w: int):
        own = [entry(f"w{w}-{i}", f"turn-{w}") for i in range(OWN)]
        batch = shared + own if w % 2 else own + shared
        return await history_ops.append_entries(ctx, "t", batch)

    responses = await asyncio.gather(*(writer(w) for w in range(WRITERS)))
    assert sum(r.created_count for r in responses) == SHARED + WRITERS * OWN
    assert sum(r.existing_count for r in responses) == (WRITERS - 1) * SHARED
    async with ctx.store.sessions() as session:
        rows = (
            await session.execute(select(EntryRow.entry_id, EntryRow.id).where(EntryRow.thread_id == "t"))
        ).all()
        turns = await session.scalar(
            select(func.count()).select_from(TurnRow).where(TurnRow.thread_id == "t")
        )
    ids = [entry_id for entry_id, _ in rows]
    assert len(ids) == len(set(ids)) == SHARED + WRITERS * OWN
    assert turns == WRITERS + 1
    # Every writer saw the same sequence for each shared entry.
    for i in range(SHARED):
        sequences = {next(e.sequence for e in r.entries if e.entry_id == f"shared-{i}") for r in responses}
        assert len(sequences) == 1


async def test_a_rejected_batch_leaves_earlier_entries_intact(pg_server):
    ctx = pg_server.ctx
    await history_ops.create_thread(ctx, "t", history_pb2.ThreadConfig())
    first = await history_ops.append_entries(ctx, "t", [entry("e1", "turn-1")])
    changed = entry("e1", "turn-1")
    changed.content = "other"
    with pytest.raises(AlreadyExists, match="entry 'e1' already exists"):
        await history_ops.append_entries(ctx, "t", [entry("e2", "turn-1"), changed])
    again = await history_ops.append_entries(ctx, "t", [entry("e1", "turn-1")])
    assert again.entries[0] == first.entries[0]
    async with ctx.store.sessions() as session:
        count = await session.scalar(
            select(func.count()).select_from(EntryRow).where(EntryRow.thread_id == "t")
        )
    assert count == 1


TURNS = 8
NEW_TURNS = 4


async def test_concurrent_completions_that_carry_answers(pg_server):
    """CompleteTurns carrying the answer, each sent twice at once (a retry racing the first) and
    beside completions of new turns, all on one thread: on PostgreSQL the statement that inserts
    an answer completes its turn, and one that waited for another's commit leaves both to the
    statements after it. Every turn ends completed with its answer stored once, each call answers
    the turn's count, and the thread's counts match its rows."""
    ctx = pg_server.ctx
    await history_ops.create_thread(ctx, "t", history_pb2.ThreadConfig(model="gpt-4o-mini"))
    for t in range(TURNS):  # each turn as a loop leaves it before CompleteTurn
        await history_ops.append_entries(ctx, "t", [entry(f"q{t}", f"turn-{t}"), entry(f"r{t}", f"turn-{t}")])
    calls = [
        history_ops.complete_turn(ctx, "t", f"turn-{t}", [entry(f"a{t}", f"turn-{t}", ASSISTANT)])
        for t in range(TURNS)
        for _ in range(2)
    ]
    calls += [
        history_ops.complete_turn(ctx, "t", f"new-{n}", [entry(f"n{n}", f"new-{n}")])
        for n in range(NEW_TURNS)
    ]
    outcomes = await asyncio.gather(*calls)
    answered = outcomes[: 2 * TURNS]
    assert [o.completed_entry_count for o in answered] == [3] * (2 * TURNS)
    for t in range(TURNS):
        first, second = answered[2 * t], answered[2 * t + 1]
        assert sorted(
            [(first.created_count, first.existing_count), (second.created_count, second.existing_count)]
        ) == [
            (0, 1),
            (1, 0),
        ]
    assert [(o.completed_entry_count, o.created_count) for o in outcomes[2 * TURNS :]] == [(1, 1)] * NEW_TURNS
    async with ctx.store.sessions() as session:
        open_rows = await session.scalar(
            select(func.count()).where(EntryRow.thread_id == "t", EntryRow.completed.is_(False))
        )
        completed_rows = await session.scalar(
            select(func.count()).where(EntryRow.thread_id == "t", EntryRow.completed.is_(True))
        )
        statuses = set(
            (await session.execute(select(TurnRow.status).where(TurnRow.thread_id == "t"))).scalars()
        )
        kept = (
            await session.execute(
                select(ThreadRow.open_entries, ThreadRow.open_turns, ThreadRow.completed_entries).where(
                    ThreadRow.thread_id == "t"
                )
            )
        ).one()
    assert (open_rows, completed_rows) == (0, 3 * TURNS + NEW_TURNS)
    assert statuses == {history_pb2.TURN_STATUS_COMPLETED}
    assert tuple(kept) == (0, 0, 3 * TURNS + NEW_TURNS)
