"""Can the database be written right now? One small write transaction that changes nothing.

SQLite rewrites its header's user_version with the value it already has (a real
write: it takes the write lock and appends to the WAL); PostgreSQL draws a
transaction id (fails on a read-only server, needs a commit record). On SQLite
the free space of the database's filesystem is checked too: a write that reuses
space already in the WAL can pass while any real append would fail.

What a full disk needs from SQLite to give its writes back (docs/operating-durability.md):
- After a failed probe every probe first checkpoints the whole WAL into the database
  file and truncates it (`PRAGMA wal_checkpoint(TRUNCATE)`): without that the WAL
  keeps its largest size, and the space an operator frees is eaten by the copy.
- That checkpoint needs room in the database file for the pages the WAL holds that
  the file does not have yet (engine.py keeps them to about WAL_AUTOCHECKPOINT_PAGES).
  RESERVE_BYTES of it are kept in a file beside the database (`<db>-reserve`), made
  by a probe once that much is free beyond MIN_FREE_BYTES and room for the WAL to grow
  back to its size limit; a checkpoint that fails
  for lack of room deletes it and tries again, so the WAL can always be let go.
- A successful probe also checkpoints what it can without waiting for anyone
  (PASSIVE): while the store is idle its WAL's pages are all in the database file,
  and a disk that fills then costs the checkpoint nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from pioneer_grpc.errors import PioneerError, ResourceExhausted, Unavailable
from pioneer_grpc.reasons import DISK_FULL
from pioneer_grpc.store.engine import JOURNAL_SIZE_LIMIT_BYTES
from pioneer_grpc.store.failures import domain_error

log = logging.getLogger(__name__)

# Below this much free space next to a SQLite database, it counts as full.
MIN_FREE_BYTES = 1024 * 1024
# Room for one checkpoint of a WAL kept to about its size limit (engine.py).
RESERVE_BYTES = JOURNAL_SIZE_LIMIT_BYTES
RESERVE_SUFFIX = "-reserve"


def sqlite_path(engine: AsyncEngine) -> Path | None:
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        return None
    return Path(database)


def reserve_path(database: Path) -> Path:
    return database.with_name(database.name + RESERVE_SUFFIX)


def release_reserve(database: Path) -> bool:
    """Deletes the reserve file; whether there was one (another worker may have taken it first)."""
    try:
        reserve_path(database).unlink()
    except FileNotFoundError:
        return False
    log.warning("released %d bytes reserved beside %s for a checkpoint", RESERVE_BYTES, database)
    return True


def remake_reserve(database: Path, free: int) -> int:
    """Makes the reserve file when it is missing and `free` bytes leave room after it (module doc).

    Returns the bytes still free. Written under a temporary name and renamed, so a
    reserve file is always whole; allocated for real (posix_fallocate), not sparse.
    """
    target = reserve_path(database)
    if target.exists() or free < RESERVE_BYTES + MIN_FREE_BYTES + JOURNAL_SIZE_LIMIT_BYTES:
        return free
    partial = target.with_name(f"{target.name}.{os.getpid()}")
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        finally:
            os.close(fd)
        os.replace(partial, target)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink()
        return free
    return free - RESERVE_BYTES


async def _checkpoint(engine: AsyncEngine, mode: str) -> None:
    async with engine.connect() as conn:
        await conn.execute(text(f"PRAGMA wal_checkpoint({mode})"))


async def reclaim_wal(engine: AsyncEngine) -> None:
    """Checkpoints the whole WAL into the database file and truncates the WAL to nothing (SQLite only).

    Waits (busy timeout) for writers and for readers of older snapshots. A checkpoint
    that cannot finish for lack of room releases the reserve and tries once more;
    without one it leaves the WAL as it was (the pages it copied stay copied).
    """
    path = sqlite_path(engine)
    if path is None:
        return
    try:
        await _checkpoint(engine, "TRUNCATE")
    except OperationalError as exc:
        mapped = domain_error(exc)
        if mapped is None or mapped.reason != DISK_FULL:
            raise
        if not await asyncio.to_thread(release_reserve, path):
            raise
        await _checkpoint(engine, "TRUNCATE")


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
    if path is not None:
        await _checkpoint(engine, "PASSIVE")
        await asyncio.to_thread(remake_reserve, path, free)


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
