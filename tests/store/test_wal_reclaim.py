"""After a failed probe the WAL is truncated: the space a checkpoint left in it goes back to the disk."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import text

from pioneer_grpc.store.engine import create_engine
from pioneer_grpc.store.probe import check_writable


def size(path: Path) -> int:
    return path.stat().st_size


async def test_a_probe_after_a_failure_truncates_the_wal_and_keeps_every_row(tmp_path):
    path = tmp_path / "pioneer.db"
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    try:
        async with engine.begin() as conn:
            await conn.execute(text("CREATE TABLE t (x BLOB)"))
            for _ in range(200):
                await conn.execute(text("INSERT INTO t VALUES (randomblob(8000))"))
        # A checkpoint as SQLite runs by itself: the pages are copied, the WAL file keeps its size.
        other = sqlite3.connect(path)
        assert other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[0] == 0
        other.close()
        wal = tmp_path / "pioneer.db-wal"
        assert size(wal) > 1_000_000

        await check_writable(engine)
        assert size(wal) > 1_000_000, "an ordinary probe changed the WAL's size"
        await check_writable(engine, reclaim=True)
        # Only the probe's own write is left in it.
        assert size(wal) < 100_000
        async with engine.connect() as conn:
            assert await conn.scalar(text("SELECT count(*) FROM t")) == 200
    finally:
        await engine.dispose()
