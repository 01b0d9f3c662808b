"""The retention sweeper's background task: a sweep (service/retention.py) every
--retention-sweep-seconds, from the moment the server serves until it stops.

Every worker and replica runs one; the store's sweep lock lets one sweep at a time and the others
skip their turn. `clock` is what a sweep takes as now: tests give one of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from pioneer_grpc.service import retention
from pioneer_grpc.service.context import ServiceContext

log = logging.getLogger(__name__)
# After a failed sweep (the database away), the next one waits at least this long.
RETRY_SECONDS = 30.0


class RetentionSweeper:
    def __init__(
        self, ctx: ServiceContext, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    ) -> None:
        self._ctx = ctx
        self._clock = clock
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._ctx.config.retention_sweep_seconds > 0:
            self._task = asyncio.create_task(self._run(), name="retention-sweeper")

    async def sweep(self, moment: datetime | None = None) -> retention.Swept:
        """One sweep now, as of `moment` (default: the clock's now)."""
        return await retention.sweep_at(self._ctx, moment or self._clock())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        every = self._ctx.config.retention_sweep_seconds
        while True:
            await asyncio.sleep(every)
            try:
                await self.sweep()
            except Exception:
                log.warning(
                    "retention sweep failed; the next in %ss", max(every, RETRY_SECONDS), exc_info=True
                )
                await asyncio.sleep(max(0.0, RETRY_SECONDS - every))
