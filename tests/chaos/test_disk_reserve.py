"""SQLite on a full disk: the room a checkpoint needs is kept in a reserve file, and a probe checkpoints
what it can, so the WAL can always be let go (store/probe.py, docs/operating-durability.md)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from pioneer_grpc.store.engine import create_engine
from pioneer_grpc.store.probe import RESERVE_BYTES, check_writable, reclaim_wal, release_reserve, reserve_path
from tests.chaos.conftest import fill

ROWS = 40
ROW_BYTES = 8000  # 40 rows: about 320 KB of pages the database file lacks, fewer than an autocheckpoint


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


@pytest.fixture
async def engine(small_tmpfs: Path) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(f"sqlite+aiosqlite:///{small_tmpfs / 'pioneer.db'}")
    async with engine.begin() as conn:
        await conn.execute(text("CREATE TABLE t (x BLOB)"))
    yield engine
    await engine.dispose()


def _write_past_checkpoints(database: Path) -> sqlite3.Connection:
    """Rows committed to the WAL by a writer whose checkpoints are off; kept open (closing the last
    connection would checkpoint)."""
    raw = sqlite3.connect(database)
    raw.execute("PRAGMA wal_autocheckpoint=0")
    for _ in range(ROWS):
        raw.execute("INSERT INTO t VALUES (randomblob(?))", (ROW_BYTES,))
        raw.commit()
    return raw


async def _rows(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int(await conn.scalar(text("SELECT count(*) FROM t")) or 0)


async def test_the_reserve_lets_the_checkpoint_of_a_full_disk_finish(engine, small_tmpfs):
    database = small_tmpfs / "pioneer.db"
    await check_writable(engine)
    assert _size(reserve_path(database)) == RESERVE_BYTES
    raw = _write_past_checkpoints(database)
    try:
        filler = fill(small_tmpfs)
        await reclaim_wal(engine)
        # The reserve went to the checkpoint; the WAL is let go and every row is in the database file.
        assert not reserve_path(database).exists()
        assert _size(database.with_name("pioneer.db-wal")) == 0
        assert await _rows(engine) == ROWS
        # Room again: the next probe makes the reserve again.
        filler.unlink()
        await check_writable(engine)
        assert _size(reserve_path(database)) == RESERVE_BYTES
    finally:
        raw.close()


async def test_without_the_reserve_that_checkpoint_cannot_finish(engine, small_tmpfs):
    database = small_tmpfs / "pioneer.db"
    await check_writable(engine)
    assert release_reserve(database)
    raw = _write_past_checkpoints(database)
    try:
        fill(small_tmpfs)
        with pytest.raises(OperationalError, match="full"):
            await reclaim_wal(engine)
        assert _size(database.with_name("pioneer.db-wal")) > ROWS * ROW_BYTES
    finally:
        raw.close()


async def test_a_probe_checkpoints_so_a_full_disk_later_costs_nothing(engine, small_tmpfs):
    database = small_tmpfs / "pioneer.db"
    await check_writable(engine)
    raw = _write_past_checkpoints(database)
    try:
        await check_writable(engine)  # an ordinary probe: its checkpoint copies the rows' pages
        fill(small_tmpfs)
        await reclaim_wal(engine)
        # Nothing left to copy: the WAL is let go with the reserve untouched.
        assert _size(reserve_path(database)) == RESERVE_BYTES
        assert _size(database.with_name("pioneer.db-wal")) == 0
        assert await _rows(engine) == ROWS
    finally:
        raw.close()
