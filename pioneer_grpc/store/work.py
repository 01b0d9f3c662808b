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

from pioneer_grpc.store.engine import POOL_WAIT_SECONDS
from pioneer_grpc.store.failures import describe, domain_error, unit_timed_out

log = logging.getLogger(__name__)
# Units still running, possibly for callers that were cancelled: waited for before an engine goes.
_RUNNING: set[asyncio.Future[Any]] = set()

# Longest a caller waits for one unit of database work: a pool wait, then a statement's bound.
UNIT_SECONDS = float(POOL_WAIT_SECONDS)

P = ParamSpec("P")
T = TypeVar("T")


async def run_to_end(work: Awaitable[T]) -> T:
    """Awaits `work` to its end even if the caller is cancelled meanwhile (then re-raises that).

    The caller waits at most UNIT_SECONDS: a database that stops answering
    (frozen, unreachable mid-statement) can stretch a unit past the sum of its
    timeouts (a statement's, the cancel request's, the rollback's). Past the
    bound the caller gets UNAVAILABLE (DATABASE_TIMEOUT) while the unit runs on
    to its own end, tracked like a cancelled caller's.
    """
    task = asyncio.ensure_future(work)
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + UNIT_SECONDS
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        remaining = deadline - loop.time()
        if remaining <= 0 and cancelled is None:
            task.add_done_callback(_retrieved)
            log.warning(
                "database work still running after %ss: the caller is answered UNAVAILABLE", UNIT_SECONDS
            )
            raise unit_timed_out(UNIT_SECONDS)
        try:
            await asyncio.wait({task}, timeout=remaining if cancelled is None else None)
        except asyncio.CancelledError as exc:
            cancelled = exc  # the caller's: the work still runs to its end
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


def _retrieved(task: asyncio.Future[Any]) -> None:
    """The result of a unit nobody waits for any more is read, so it is not reported as never retrieved."""
    error = None if task.cancelled() else task.exception()
    if error is not None:
        log.warning("database work ended after its caller was answered: %s", describe(error))


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
