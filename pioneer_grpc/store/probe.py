"""Can the database be written right now? One small write transaction that changes nothing.

SQLite rewrites its header's user_version with the value it already has (a real
write: it takes the write lock and appends to the WAL); PostgreSQL draws a
transaction id (fails on a read-only server, needs a commit record). On SQLite
the free space of the database's filesystem is checked too: a write that reuses
space already in the WAL can pass while any real append would fail.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from pioneer_grpc.errors import ResourceExhausted
from pioneer_grpc.store.failures import DISK_FULL

# Below this much free space next to a SQLite database, it counts as full.
MIN_FREE_BYTES = 1024 * 1024


def sqlite_path(engine: AsyncEngine) -> Path | None:
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        return None
    return Path(database)


async def check_writable(engine: AsyncEngine) -> None:
    """Returns when a write transaction succeeded; raises what the write raised otherwise."""
    path = sqlite_path(engine)
    if path is not None:
        free = (await asyncio.to_thread(shutil.disk_usage, path.parent)).free
        if free < MIN_FREE_BYTES:
            raise ResourceExhausted(f"{free} bytes free next to the database", reason=DISK_FULL)
    async with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            await conn.execute(text("SELECT txid_current()"))
        else:
            version = int(await conn.scalar(text("PRAGMA user_version")) or 0)
            await conn.execute(text(f"PRAGMA user_version = {version}"))
