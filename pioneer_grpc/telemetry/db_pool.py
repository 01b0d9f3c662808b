"""Count database connection checkouts that had to wait, and for how long.

SQLAlchemy's pool has events for a checkout that succeeded but none for one
that waits, so the pool's own getter is wrapped: a checkout that starts with no
idle connection in the pool counts as a wait (for a returned connection, or for
a new one to open), timed until it has one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from pioneer_grpc.telemetry.metrics import NoMetrics


def instrument_pool(engine: AsyncEngine, metrics: NoMetrics) -> bool:
    """False when the engine's pool keeps no idle connections to count (nothing wrapped)."""
    pool: Any = engine.sync_engine.pool
    if not metrics.enabled or not hasattr(pool, "checkedin"):
        return False
    get: Callable[[], Any] = pool._do_get

    def counted_get() -> Any:
        if pool.checkedin() > 0:
            return get()
        started = time.perf_counter()
        try:
            return get()
        finally:
            metrics.pool_wait(time.perf_counter() - started)

    pool._do_get = counted_get
    return True
