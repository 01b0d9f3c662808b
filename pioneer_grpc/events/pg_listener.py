"""LISTEN for manifest event ids on a dedicated asyncpg connection, outside the SQLAlchemy pool.

The connection is watched (termination callback plus a periodic ping); when it is
lost the listener reconnects with backoff and pokes the hub once LISTEN is back,
so the hub re-reads everything after its last id: a notification missed while
disconnected costs latency, never an event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url

from pioneer_grpc.store.manifests import NOTIFY_CHANNEL

log = logging.getLogger(__name__)
# Shown in pg_stat_activity, so an operator can tell these connections apart.
APPLICATION_NAME = "pioneer-grpc manifest listener"


def asyncpg_dsn(database_url: str) -> str:
    """`postgresql+asyncpg://...` (SQLAlchemy) -> `postgresql://...` (asyncpg)."""
    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


class PgEventListener:
    def __init__(
        self,
        dsn: str,
        on_event: Callable[[int | None], None],
        *,
        ping_seconds: float = 5.0,
        max_backoff_seconds: float = 5.0,
    ) -> None:
        self._dsn = dsn
        self._on_event = on_event
        self._ping_seconds = ping_seconds
        self._max_backoff = max_backoff_seconds
        self._conn: Any = None
        self._lost = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """The first connection is made here, so a bad URL fails server start."""
        await self._connect()
        self._task = asyncio.create_task(self._run(), name="manifest-pg-listener")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._disconnect()

    def _notified(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        try:
            event_id: int | None = int(payload)
        except ValueError:
            event_id = None
        self._on_event(event_id)

    async def _connect(self) -> None:
        conn = await asyncpg.connect(
            self._dsn, timeout=10, server_settings={"application_name": APPLICATION_NAME}
        )
        self._lost = asyncio.Event()
        lost = self._lost
        conn.add_termination_listener(lambda _conn: lost.set())
        await conn.add_listener(NOTIFY_CHANNEL, self._notified)
        self._conn = conn
        # Anything committed while nobody listened is read now.
        self._on_event(None)

    async def _disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            async with asyncio.timeout(2):
                await conn.close()
        except Exception:
            conn.terminate()

    async def _alive(self) -> bool:
        try:
            async with asyncio.timeout(self._ping_seconds):
                await self._conn.fetchval("SELECT 1")
        except Exception:
            return False
        return True

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._ping_seconds):
                    await self._lost.wait()
            if not self._lost.is_set() and await self._alive():
                continue
            log.warning("manifest LISTEN connection lost; reconnecting")
            await self._disconnect()
            await self._reconnect()

    async def _reconnect(self) -> None:
        backoff = 0.05
        while True:
            try:
                await self._connect()
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
                log.warning("manifest LISTEN reconnect failed (%s); retrying in %.2fs", exc, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self._max_backoff)
            else:
                log.info("manifest LISTEN connection re-established")
                return
