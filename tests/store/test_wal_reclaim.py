"""The WAL gives its space back: cut to its size limit once let go, truncated whole by a probe after
a failure (store/engine.py, store/probe.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import text

from pioneer_grpc.store.engine import JOURNAL_SIZE_LIMIT_BYTES, create_engine
from pioneer_grpc.store.probe import check_writable

BIG_TRANSACTION_ROWS = 400  # 8 KB each: a WAL of about 3 MB


def size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


async def test_a_wal_grown_past_its_limit_is_cut_back_once_let_go(tmp_path):
    path = tmp_path / "pioneer.db"
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    try:
        async with engine.begin() as conn:
            await conn.execute(text("CREATE TABLE t (x BLOB)"))
            for _ in range(BIG_TRANSACTION_ROWS):
                await conn.execute(text("INSERT INTO t VALUES (randomblob(8000))"))
        wal = tmp_path / "pioneer.db-wal"
        assert size(wal) > 2 * JOURNAL_SIZE_LIMIT_BYTES
        # An ordinary probe: its checkpoint copies the pages, its next write starts the WAL over.
        await check_writable(engine)
        await check_writable(engine)
        assert size(wal) <= JOURNAL_SIZE_LIMIT_BYTES
        async with engine.connect() as conn:
            assert await conn.scalar(text("SELECT count(*) FROM t")) == BIG_TRANSACTION_ROWS
    finally:
        await engine.dispose()


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

        await check_writable(engine, reclaim=True)
        # Only the probe's own write is left in it.
        assert size(wal) < 100_000
        async with engine.connect() as conn:
            assert await conn.scalar(text("SELECT count(*) FROM t")) == 200
    finally:
        await engine.dispose()
