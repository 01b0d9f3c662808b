"""On PostgreSQL the pool keeps the connections it opened: units at once beyond a fixed few do not
make it open a connection again for each (a connect, a login and every statement prepared anew)."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import event, text
from sqlalchemy.util import await_only

from pioneer_grpc.store.engine import PG_MAX_OVERFLOW, PG_POOL_SIZE, create_engine, pool_state
from pioneer_grpc.store.runner import TransactionRunner

pytestmark = pytest.mark.postgres

AT_ONCE = 16
WAVES = 3


async def test_connections_opened_for_units_at_once_are_kept_for_the_next_ones(postgres_url) -> None:
    engine = create_engine(postgres_url)
    runner = TransactionRunner(engine)
    opened: list[object] = []
    event.listen(engine.sync_engine, "connect", lambda conn, _record: opened.append(conn))
    try:
        for _ in range(WAVES):
            together = asyncio.Barrier(AT_ONCE)

            def work(conn, together=together):
                conn.execute(text("SELECT 1"))
                await_only(together.wait())  # every unit holds its connection at once

            await asyncio.gather(*(runner.transact(work) for _ in range(AT_ONCE)))
        state = pool_state(engine)
    finally:
        await runner.close()
        await engine.dispose()
    assert AT_ONCE <= PG_POOL_SIZE + PG_MAX_OVERFLOW
    assert len(opened) == AT_ONCE
    assert (state.open, state.checked_out) == (AT_ONCE, 0)
