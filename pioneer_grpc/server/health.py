"""Health follows the database: NOT_SERVING while it cannot be written, SERVING again once it can.

A background task probes every `interval` seconds (the store's probe, given by the
wiring: a PioneerError when the database cannot be written), and at once
when an RPC met an infrastructure failure (`poke`). A probe that has not
answered within PROBE_WAIT_SECONDS counts as failed (on SQLite it queues behind
the RPCs for the one connection: a busy store is not a broken one); a new one
starts only after the previous one ended, so a hung database costs one probe.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence

from grpc_health.v1 import health, health_pb2

from pioneer_grpc.errors import PioneerError, describe

log = logging.getLogger(__name__)
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
# Probe(reclaim): returns once the database took a write; `reclaim` after a failed one.
Probe = Callable[[bool], Awaitable[None]]


class DatabaseHealth:
    def __init__(
        self,
        probe: Probe,
        servicer: health.aio.HealthServicer,
        names: Sequence[str],
        interval: float,
        probe_wait_seconds: float,
    ) -> None:
        """`probe_wait_seconds`: as long as any RPC may wait for the database."""
        self._check = probe
        self._probe_wait = probe_wait_seconds
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
            # After a failure the store reclaims first (SQLite's WAL): space freed meanwhile stays free.
            self._probe = asyncio.create_task(self._checked(not self._last_ok), name="database-probe")
        done, _ = await asyncio.wait({self._probe}, timeout=max(self._interval, self._probe_wait))
        if not done:
            self._last_ok = False
            return False
        error = self._probe.exception()
        self._last_ok = error is None
        if error is None:
            return True
        reason = error.reason if isinstance(error, PioneerError) else "unexpected"
        log.debug("database probe failed (%s): %s", reason, describe(error))
        return False

    async def _checked(self, reclaim: bool) -> None:
        await self._check(reclaim)
