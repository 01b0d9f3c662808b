"""Kept rounds saved at the same moment stay within the total byte bound after every commit."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from pioneer_grpc.store import clock
from pioneer_grpc.store import rendered_rounds as store
from pioneer_grpc.store.port import RenderedBounds

WRITERS = 8
KEEPS = 10
SIZE = 1000
# Room for three rounds, not four.
BOUNDS = RenderedBounds(rounds_per_thread=1000, total_bytes=3 * SIZE + SIZE // 2, max_age=timedelta(hours=1))


async def test_concurrent_keeps_never_exceed_the_byte_bound(pg_server):
    kept = pg_server.ctx.store
    totals: list[int] = []

    async def writer(w: int) -> None:
        for k in range(KEEPS):
            await kept.rendered.keep(f"thread-{w}", "turn-1", w * KEEPS + k, bytes(SIZE), clock.now(), BOUNDS)
            totals.append(await kept.runner.read(store.total_bytes))

    await asyncio.gather(*(writer(w) for w in range(WRITERS)))
    assert len(totals) == WRITERS * KEEPS
    assert max(totals) <= BOUNDS.total_bytes, sorted(totals)[-5:]
    assert await kept.runner.read(store.total_bytes) == 3 * SIZE
