"""Retention: threads without a write for their retention are deleted, in bounded batches.

A thread's retention is its ThreadConfig.retention_days, else the server's --retention-days
(0: forever). A sweep holds the store's sweep lock (one sweeper across worker processes and
replicas) and deletes batch after batch until no expired thread is left: each thread through
the one path DeleteThread takes (service/lifecycle.py `removed`: its own small transaction,
this server's caches forget it, its watchers get their final event), re-checked there as
still expired, so a thread written since it was listed stays. After each thread the sweep
waits as long as its delete took, so it holds the store (and, on PostgreSQL, the event loop its
statements run on) at most half the time however busy serving is; between batches it pauses.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import datetime

from pioneer_grpc.service import lifecycle
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.store.port import Expiry

log = logging.getLogger(__name__)

# Threads a batch lists and deletes: each is its own transaction, so a batch bounds how long
# the sweep runs before it pauses, not how long anything waits for it.
BATCH_THREADS = 100
# The pause between batches: serving's share of the store while a large sweep runs.
BATCH_PAUSE_SECONDS = 0.05
# The share of its time a sweep spends deleting: after each delete it waits for the rest.
BUSY_SHARE = 0.5


@dataclass(frozen=True)
class Swept:
    """What a sweep deleted; `ran` is False when another sweeper held the lock."""

    ran: bool
    threads: int = 0
    bytes: int = 0
    batches: int = 0


async def sweep_at(ctx: ServiceContext, moment: datetime) -> Swept:
    """A sweep as of `moment` with the server's retention (--retention-days)."""
    return await sweep(ctx, Expiry(moment, ctx.config.retention_days))


async def sweep(
    ctx: ServiceContext,
    expiry: Expiry,
    *,
    batch: int = BATCH_THREADS,
    pause_seconds: float = BATCH_PAUSE_SECONDS,
) -> Swept:
    """Deletes every thread expired at `expiry`, `batch` at a time; a log line and the metrics per
    batch that deleted any."""
    async with ctx.root_store.retention.sweep_lock() as held:
        if not held:
            log.debug("retention: another sweeper holds the lock; this one skips its turn")
            return Swept(ran=False)
        threads = removed_bytes = batches = 0
        while True:
            listed = await ctx.root_store.retention.expired(expiry, batch)
            deleted = deleted_bytes = 0
            for key in listed:
                began = time.monotonic()
                gone = await lifecycle.removed(ctx, key, expiry=expiry)
                if gone is not None:
                    deleted += 1
                    deleted_bytes += gone.bytes
                await asyncio.sleep((time.monotonic() - began) * (1 / BUSY_SHARE - 1))
            if deleted:
                batches += 1
                threads += deleted
                removed_bytes += deleted_bytes
                ctx.telemetry.metrics.retention_deleted(deleted, deleted_bytes)
                log.info(
                    "retention: deleted %d threads (%d bytes) without a write since their retention "
                    "(server default %d days) as of %s",
                    deleted,
                    deleted_bytes,
                    expiry.default_days,
                    expiry.moment.isoformat(timespec="seconds"),
                )
            # Fewer than a batch: none left. None deleted: what is left was written meanwhile.
            if len(listed) < batch or not deleted:
                return Swept(True, threads, removed_bytes, batches)
            await asyncio.sleep(pause_seconds)
