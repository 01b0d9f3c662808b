"""Database work that a cancelled caller cannot interrupt halfway.

A client's deadline or cancel reaches the handler as asyncio.CancelledError at
whatever await it is parked on. Thrown into SQLAlchemy or a driver mid-statement,
it invalidates the connection while its worker thread (aiosqlite) or socket
(asyncpg) is still busy: the connection's transaction and its SQLite write lock
can outlive it, and every later writer waits on a lock nobody will release.

So each unit of database work runs in a task of its own and always finishes: the
caller waits for it and only then sees its cancellation. The wait is bounded by
the database timeouts set in store/engine.py. Failures leave here as domain
errors (store/failures.py), so no use case handles a driver class.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from pioneer_grpc.store.failures import describe, domain_error

log = logging.getLogger(__name__)
# Units still running, possibly for callers that were cancelled: waited for before an engine goes.
_RUNNING: set[asyncio.Future[Any]] = set()

P = ParamSpec("P")
T = TypeVar("T")


async def run_to_end(work: Awaitable[T]) -> T:
    """Awaits `work` to its end even if the caller is cancelled meanwhile (then re-raises that)."""
    task = asyncio.ensure_future(work)
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError as exc:
            caller = asyncio.current_task()
            if not task.cancelled() or (caller is not None and caller.cancelling()):
                cancelled = exc  # the caller's (else the work's own, raised by task.result() below)
        except Exception:
            pass  # the work's failure: mapped below
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # retrieved: the caller is gone and will not see it
        raise cancelled
    try:
        return task.result()
    except Exception as exc:
        mapped = domain_error(exc)
        if mapped is None:
            raise
        log.warning("database failure (%s): %s", mapped.reason, describe(exc))
        raise mapped from None


def database_work(fn: Callable[P, Awaitable[T]]) -> Callable[P, Coroutine[Any, Any, T]]:
    """Decorates a coroutine function whose database work must not be cut short (see run_to_end)."""

    @functools.wraps(fn)
    async def run(*args: P.args, **kwargs: P.kwargs) -> T:
        return await run_to_end(fn(*args, **kwargs))

    return run


async def drain(wait_seconds: float) -> int:
    """Waits up to `wait_seconds` for every unit still running; returns how many did not end."""
    running = [task for task in _RUNNING if not task.done()]
    if not running:
        return 0
    _, pending = await asyncio.wait(running, timeout=wait_seconds)
    if pending:
        log.warning("%d database units did not end within %ss", len(pending), wait_seconds)
    return len(pending)
