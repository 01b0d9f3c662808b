"""20 writers appending overlapping batches at once: nothing lost, nothing doubled."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import func, select

from pioneer_grpc.errors import AlreadyExists
from pioneer_grpc.service import history as history_ops
from pioneer_grpc.store.models import EntryRow, TurnRow
from pioneer_grpc.v1 import history_pb2
from tests.builders import entry

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
    async with ctx.sessions() as session:
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
    async with ctx.sessions() as session:
        count = await session.scalar(
            select(func.count()).select_from(EntryRow).where(EntryRow.thread_id == "t")
        )
    assert count == 1
