"""Database work that a cancelled caller cannot interrupt halfway.

A client's deadline or cancel reaches the handler as asyncio.CancelledError at
whatever await it is parked on. Thrown into SQLAlchemy or a driver mid-statement,
it invalidates the connection while its worker thread (aiosqlite) or socket
(asyncpg) is still busy: the connection's transaction and its SQLite write lock
can outlive it, and every later writer waits on a lock nobody will release.

So each unit of database work always finishes: it runs in a task of its own, or
in SQLite's thread (store/batches.py), and its caller awaits a UnitFuture that
a cancellation does not cancel; the caller waits for the end and only then sees
its cancellation. The wait is bounded by the database timeouts set in
store/engine.py, and the caller's by UNIT_SECONDS. Failures leave here as domain
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


class UnitFuture(asyncio.Future[T]):
    """A unit of work's outcome, which its caller awaits directly: cancelling the caller does not
    cancel it, so the caller goes on waiting for its end and then sees its own cancellation.

    Whoever runs the unit gives its outcome with `end` (on the event loop). If the caller was
    answered at its deadline meanwhile, `end` ends what stands in for the unit in _RUNNING.
    """

    _overrun: asyncio.Future[None] | None = None

    def cancel(self, msg: Any = None) -> bool:
        return False

    def end(self, result: Any, error: BaseException | None) -> None:
        if self.done():
            if self._overrun is not None and not self._overrun.done():
                if error is not None:
                    log.warning("database work ended after its caller was answered: %s", describe(error))
                self._overrun.set_result(None)
            return
        if isinstance(error, asyncio.CancelledError):
            super().cancel()  # the work cancelled itself: so is its caller
        elif error is not None:
            self.set_exception(error)
        else:
            self.set_result(result)

    def overran(self) -> None:
        """The caller's bound passed: it is answered UNAVAILABLE while the unit runs on, tracked."""
        if self.done():
            return
        self._overrun = self.get_loop().create_future()
        _RUNNING.add(self._overrun)
        self._overrun.add_done_callback(_RUNNING.discard)
        log.warning("database work still running after %ss: the caller is answered UNAVAILABLE", UNIT_SECONDS)
        self.set_exception(unit_timed_out(UNIT_SECONDS))


def _following(work: Awaitable[T]) -> UnitFuture[T]:
    """A UnitFuture that ends as `work` (a coroutine, run as a task of its own) ends."""
    task = asyncio.ensure_future(work)
    future: UnitFuture[T] = UnitFuture(loop=task.get_loop())

    def ended(task: asyncio.Future[T]) -> None:
        if task.cancelled():
            future.end(None, asyncio.CancelledError())
        else:
            error = task.exception()
            future.end(None if error is not None else task.result(), error)

    task.add_done_callback(ended)
    return future


async def run_to_end(work: Awaitable[T]) -> T:
    """Awaits `work` to its end even if the caller is cancelled meanwhile (then re-raises that).

    `work` is a UnitFuture (store/batches.py makes one per unit: awaited as it is, with
    no task and no waiter between the unit and its caller) or a coroutine, run as a task
    of its own. The caller waits at most UNIT_SECONDS: a database that stops answering
    (frozen, unreachable mid-statement) can stretch a unit past the sum of its
    timeouts (a statement's, the cancel request's, the rollback's). Past the
    bound the caller gets UNAVAILABLE (DATABASE_TIMEOUT) while the unit runs on
    to its own end, tracked like a cancelled caller's.
    """
    future = work if isinstance(work, UnitFuture) else _following(work)
    _RUNNING.add(future)
    future.add_done_callback(_RUNNING.discard)
    deadline = future.get_loop().call_later(UNIT_SECONDS, future.overran)
    try:
        return await future
    except asyncio.CancelledError:
        if future.done() and not future.cancelled():
            future.exception()  # retrieved: the caller is gone and will not see it
        raise
    except Exception as exc:
        mapped = domain_error(exc)
        if mapped is None:
            raise
        log.warning("database failure (%s): %s", mapped.reason, describe(exc))
        raise mapped from None
    finally:
        deadline.cancel()


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
