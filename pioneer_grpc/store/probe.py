"""Can the database be written right now? One small write transaction that changes nothing.

SQLite rewrites its header's user_version with the value it already has (a real
write: it takes the write lock and appends to the WAL); PostgreSQL draws a
transaction id (fails on a read-only server, needs a commit record). On SQLite
the free space of the database's filesystem is checked too: a write that reuses
space already in the WAL can pass while any real append would fail.

After a failed probe (a full disk, typically) every probe on SQLite first
truncates the WAL (`PRAGMA wal_checkpoint(TRUNCATE)`): a checkpoint copies the
WAL's pages into the database file but leaves the WAL file at its largest size,
so without the truncation the space an operator frees is eaten by the copy while
the WAL keeps what it held. Truncated, the WAL gives its space back, the free
space the probe measures is the space writes will have, and health follows.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from pioneer_grpc.errors import PioneerError, ResourceExhausted, Unavailable
from pioneer_grpc.reasons import DISK_FULL
from pioneer_grpc.store.failures import domain_error

# Below this much free space next to a SQLite database, it counts as full.
MIN_FREE_BYTES = 1024 * 1024


def sqlite_path(engine: AsyncEngine) -> Path | None:
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        return None
    return Path(database)


async def reclaim_wal(engine: AsyncEngine) -> None:
    """Checkpoints the whole WAL into the database file and truncates the WAL to nothing (SQLite only).

    Waits (busy timeout) for writers and for readers of older snapshots; a checkpoint
    that cannot finish (the database file cannot grow yet) leaves the WAL as it was.
    """
    if sqlite_path(engine) is None:
        return
    async with engine.connect() as conn:
        await conn.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))


async def check_writable(engine: AsyncEngine, reclaim: bool = False) -> None:
    """Returns when a write transaction succeeded; raises what the write raised otherwise.

    `reclaim`: truncate SQLite's WAL first (after a failed probe: space may be coming back).
    """
    path = sqlite_path(engine)
    if path is not None:
        if reclaim:
            await reclaim_wal(engine)
        free = (await asyncio.to_thread(shutil.disk_usage, path.parent)).free
        if free < MIN_FREE_BYTES:
            raise ResourceExhausted(f"{free} bytes free next to the database", reason=DISK_FULL)
    async with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            await conn.execute(text("SELECT txid_current()"))
        else:
            version = int(await conn.scalar(text("PRAGMA user_version")) or 0)
            await conn.execute(text(f"PRAGMA user_version = {version}"))


async def probe_writable(engine: AsyncEngine, reclaim: bool = False) -> None:
    """`check_writable`, its failures named as every store failure is (store/failures.py): a
    PioneerError, UNAVAILABLE for one no mapping knows."""
    try:
        await check_writable(engine, reclaim)
    except PioneerError:
        raise
    except Exception as exc:
        mapped = domain_error(exc)
        if mapped is None:
            raise Unavailable("database probe failed", reason="DATABASE_UNAVAILABLE") from exc
        raise mapped from exc
