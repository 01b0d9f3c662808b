"""Work a cancelled caller cannot cut short: a round's commit and the publishing of its event.

A client's deadline or cancel reaches the handler as asyncio.CancelledError at
whatever await it is parked on. A round whose commit is under way must still hand
its committed event to the live observers, so the round runs as a task of its own
and its caller waits for that task's end before it sees its own cancellation (the
store's units of work run to their end the same way, store/work.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")


class _Outcome(asyncio.Future[T]):
    """The task's outcome, which its caller awaits: cancelling the caller does not cancel it."""

    def cancel(self, msg: Any = None) -> bool:
        return False


async def to_the_end(work: Awaitable[T]) -> T:
    """Awaits `work` (run as a task of its own) to its end even if the caller is cancelled meanwhile,
    and only then raises that cancellation."""
    task = asyncio.ensure_future(work)
    outcome: _Outcome[T] = _Outcome(loop=task.get_loop())

    def ended(done: asyncio.Future[T]) -> None:
        if done.cancelled():
            asyncio.Future.cancel(outcome)
        elif (error := done.exception()) is not None:
            outcome.set_exception(error)
        else:
            outcome.set_result(done.result())

    task.add_done_callback(ended)
    return await outcome
