"""The per-thread compression lock: one summarizer call per thread at a time.

Two layers. In the process, an asyncio.Lock per (database, thread) queues loads
of one thread without touching the database. Across processes: on SQLite (the
workers of `serve --workers N` share the file) a byte-range lock per thread in a
lock file next to the database, tried without blocking and retried with backoff;
on PostgreSQL, replicas share the store,
so the holder also takes a session-level advisory lock on a hash of the thread
id, on a dedicated connection held for as long as it summarizes (a crashed
holder's connection closes and frees the lock). Waiting is bounded: a load that
cannot get the lock in time answers without compressing.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from pioneer_grpc.store.work import run_to_end

POLL_SECONDS = 0.05
MAX_POLL_SECONDS = 0.5


def advisory_key(thread_id: str) -> int:
    """A signed 64-bit key for pg_advisory_lock, stable across replicas and versions."""
    digest = hashlib.sha256(b"pioneer-history-compress:" + thread_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


@dataclass
class _Entry:
    lock: asyncio.Lock
    users: int = 0


class _LocalLocks:
    """asyncio.Locks by key, forgotten once nobody holds or waits for them."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], _Entry] = {}

    @asynccontextmanager
    async def hold(self, key: tuple[str, str], wait_seconds: float) -> AsyncIterator[bool]:
        entry = self._entries.setdefault(key, _Entry(asyncio.Lock()))
        entry.users += 1
        try:
            acquired = True
            try:
                async with asyncio.timeout(wait_seconds):
                    await entry.lock.acquire()
            except TimeoutError:
                acquired = False
            if not acquired:
                yield False
                return
            try:
                yield True
            finally:
                entry.lock.release()
        finally:
            entry.users -= 1
            if entry.users == 0:
                del self._entries[key]

    def __len__(self) -> int:
        return len(self._entries)


LOCAL_LOCKS = _LocalLocks()


async def _try_advisory(conn: AsyncConnection, key: int, deadline: float) -> bool:
    delay = POLL_SECONDS
    while True:
        if await run_to_end(_take_advisory(conn, key)):
            return True
        if time.monotonic() + delay > deadline:
            return False
        await asyncio.sleep(delay)
        delay = min(delay * 2, MAX_POLL_SECONDS)


async def _take_advisory(conn: AsyncConnection, key: int) -> bool:
    got = bool(await conn.scalar(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}))
    await conn.commit()
    return got


async def _release_advisory(conn: AsyncConnection, key: int) -> None:
    try:
        await conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
        await conn.commit()
    except BaseException:
        # A connection that may still hold the lock must not go back to the pool.
        await conn.invalidate()
        raise


class _FileLocks:
    """Byte-range locks in one file next to a SQLite store: the per-thread lock across worker processes.

    One descriptor per file for the life of the process, because POSIX drops
    every lock a process holds on a file when any of its descriptors for that
    file closes. Within the process the asyncio locks above already serialise.
    """

    def __init__(self) -> None:
        self._fds: dict[str, int] = {}

    def _fd(self, path: str) -> int:
        if path not in self._fds:
            self._fds[path] = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        return self._fds[path]

    def try_lock(self, path: str, offset: int) -> bool:
        try:
            fcntl.lockf(self._fd(path), fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
        except BlockingIOError:
            return False
        return True

    def unlock(self, path: str, offset: int) -> None:
        fcntl.lockf(self._fd(path), fcntl.LOCK_UN, 1, offset)


FILE_LOCKS = _FileLocks()


async def _try_file_lock(path: str, offset: int, deadline: float) -> bool:
    delay = POLL_SECONDS
    while not await asyncio.to_thread(FILE_LOCKS.try_lock, path, offset):
        if time.monotonic() + delay > deadline:
            return False
        await asyncio.sleep(delay)
        delay = min(delay * 2, MAX_POLL_SECONDS)
    return True


def _sqlite_lock_file(engine: AsyncEngine) -> str | None:
    database = engine.url.database
    if engine.dialect.name != "sqlite" or database in (None, "", ":memory:"):
        return None
    return f"{database}.thread-locks"


@asynccontextmanager
async def _across_sqlite_workers(path: str, thread_id: str, deadline: float) -> AsyncIterator[bool]:
    offset = advisory_key(thread_id) & 0x7FFFFFFF
    if not await _try_file_lock(path, offset, deadline):
        yield False
        return
    try:
        yield True
    finally:
        await asyncio.to_thread(FILE_LOCKS.unlock, path, offset)


@asynccontextmanager
async def compression_lock(engine: AsyncEngine, thread_id: str, wait_seconds: float) -> AsyncIterator[bool]:
    """Yields True while this load may compress the thread, False when the wait ran out.

    The advisory lock's statements and the connection's checkout and return run
    to their end even when the load is cancelled (store/work.py): a lock taken
    by a cancelled load is still released.
    """
    deadline = time.monotonic() + wait_seconds
    # By the database's URL (its password hidden): engines of one database share the thread's lock.
    database = engine.url.render_as_string(hide_password=True)
    async with LOCAL_LOCKS.hold((database, thread_id), wait_seconds) as held:
        lock_file = _sqlite_lock_file(engine)
        if held and lock_file is not None:
            async with _across_sqlite_workers(lock_file, thread_id, deadline) as across:
                yield across
            return
        if not held or engine.dialect.name != "postgresql":
            yield held
            return
        key = advisory_key(thread_id)
        conn = await run_to_end(engine.connect().start())
        try:
            if not await _try_advisory(conn, key, deadline):
                yield False
                return
            try:
                yield True
            finally:
                await run_to_end(_release_advisory(conn, key))
        finally:
            await run_to_end(conn.close())
