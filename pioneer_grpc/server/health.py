"""Health follows the database: NOT_SERVING while it cannot be written, SERVING again once it can.

A background task probes every `interval` seconds (store/probe.py), and at once
when an RPC met an infrastructure failure (`poke`). A probe that has not
answered within PROBE_WAIT_SECONDS counts as failed (on SQLite it queues behind
the RPCs for the one connection: a busy store is not a broken one); a new one
starts only after the previous one ended, so a hung database costs one probe.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from grpc_health.v1 import health, health_pb2
from sqlalchemy.ext.asyncio import AsyncEngine

from pioneer_grpc.errors import PioneerError
from pioneer_grpc.store.engine import POOL_WAIT_SECONDS
from pioneer_grpc.store.failures import describe, domain_error
from pioneer_grpc.store.probe import check_writable

log = logging.getLogger(__name__)
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
# As long as any RPC may wait for a connection.
PROBE_WAIT_SECONDS = float(POOL_WAIT_SECONDS)


class DatabaseHealth:
    def __init__(
        self,
        engine: AsyncEngine,
        servicer: health.aio.HealthServicer,
        names: Sequence[str],
        interval: float,
    ) -> None:
        self._engine = engine
        self._servicer = servicer
        self._names = list(names)
        self._interval = interval
        self._wake = asyncio.Event()
        self._probe: asyncio.Task[None] | None = None
        self._task: asyncio.Task[None] | None = None
        self.serving = True
        self._last_ok = True

    async def set_all(self, serving: bool) -> None:
        self.serving = serving
        for name in self._names:
            await self._servicer.set(name, SERVING if serving else NOT_SERVING)

    def start(self) -> None:
        if self._interval > 0:
            self._task = asyncio.create_task(self._run(), name="database-health")

    def poke(self) -> None:
        """Probe now: an RPC just met a database failure."""
        self._wake.set()

    async def idle(self) -> None:
        """Returns once no probe is under way (the probe's connection is back in the pool)."""
        probe = self._probe
        if probe is not None and not probe.done():
            await asyncio.wait({probe})

    async def close(self) -> None:
        self.serving = False
        for task in (self._task, self._probe):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._interval):
                    await self._wake.wait()
            self._wake.clear()
            writable = await self.probe()
            if writable != self.serving:
                log.warning(
                    "database %s: health %s",
                    "writable again" if writable else "cannot be written",
                    "SERVING" if writable else "NOT_SERVING",
                )
                await self.set_all(writable)

    async def probe(self) -> bool:
        if self._probe is None or self._probe.done():
            # After a failure the WAL is truncated first (store/probe.py): space freed meanwhile stays free.
            self._probe = asyncio.create_task(
                check_writable(self._engine, reclaim=not self._last_ok), name="database-probe"
            )
        done, _ = await asyncio.wait({self._probe}, timeout=max(self._interval, PROBE_WAIT_SECONDS))
        if not done:
            self._last_ok = False
            return False
        error = self._probe.exception()
        self._last_ok = error is None
        if error is None:
            return True
        mapped = error if isinstance(error, PioneerError) else domain_error(error)
        reason = mapped.reason if mapped is not None else "unexpected"
        log.debug("database probe failed (%s): %s", reason, describe(error))
        return False
