"""SQLite's units of work, committed together when they wait together: one fsync for a batch.

With `synchronous=FULL` every commit waits for the disk; the runner's one thread
commits for every caller in the process, so under load the callers queue behind
each other's fsyncs. A unit that arrives while another runs waits in a queue; the
thread then takes every unit waiting (up to MAX_UNITS) as one batch: one transaction
in which each unit runs inside a SAVEPOINT of its own, then one COMMIT. A unit that
raises is rolled back to its savepoint and answered with its error; the others go
on. A failure that leaves no savepoint to roll back to, or a failing COMMIT, fails
every unit of the batch, and nothing of it is stored. Each caller is answered once
the batch committed: nothing is acknowledged before it is durable. A unit alone is
a batch of one on the same path, without a savepoint (its failure is the
transaction's). Each unit runs in its caller's context (its trace span).

Callers are answered with one wake-up of their event loop per batch.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Connection

from pioneer_grpc.store.work import UnitFuture
from pioneer_grpc.store.worker import Worker

# A batch's units answer only once all of them ran: bounded, so the first waits for few others.
MAX_UNITS = 16


@dataclass
class Unit:
    work: Callable[[Connection], Any]
    loop: asyncio.AbstractEventLoop
    future: UnitFuture[Any]
    context: contextvars.Context = field(default_factory=contextvars.copy_context)
    result: Any = None
    error: BaseException | None = None

    def run(self, conn: Connection) -> None:
        self.result = self.work(conn)

    def answer(self) -> None:
        """On the caller's loop, once the batch committed (or failed): its caller answered."""
        self.future.end(self.result, self.error)


def settle(answers: list[tuple[UnitFuture[Any], Any, BaseException | None]]) -> None:
    for future, result, error in answers:
        future.end(result, error)


def answer_units(units: list[Unit]) -> None:
    """On their callers' loop: each unit's caller answered (`Unit.answer`)."""
    for unit in units:
        unit.answer()


def _by_loop(units: list[Unit], call: Callable[[list[Unit]], None]) -> None:
    """`call(units of a loop)` on each loop of `units`: one call into each event loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[Unit]] = {}
    for unit in units:
        by_loop.setdefault(unit.loop, []).append(unit)
    for loop, its_units in by_loop.items():
        try:
            loop.call_soon_threadsafe(call, its_units)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass


def _post(units: list[Unit]) -> None:
    """Answers `units`' callers."""
    _by_loop(units, answer_units)


class Batches:
    """The queue in front of the SQLite thread. `connection()` is the thread's connection as a
    context manager (given back to the pool when what runs inside it raises)."""

    def __init__(self, thread: Worker, connection: Callable[[], AbstractContextManager[Connection]]) -> None:
        self._thread = thread
        self._connection = connection
        self._lock = threading.Lock()
        self._waiting: list[Unit] = []
        self._scheduled = False

    def submit(self, work: Callable[[Connection], Any]) -> UnitFuture[Any]:
        loop = asyncio.get_running_loop()
        unit = Unit(work, loop, UnitFuture(loop=loop))
        with self._lock:
            self._waiting.append(unit)
            schedule = not self._scheduled
            self._scheduled = True
        if schedule:
            self._thread.put(self._next_batch)
        return unit.future

    def _next_batch(self) -> None:
        """One batch, then the next put behind whatever else the thread was given (reads)."""
        while True:
            with self._lock:
                batch, self._waiting = self._waiting[:MAX_UNITS], self._waiting[MAX_UNITS:]
            self._run(batch)
            with self._lock:
                self._scheduled = bool(self._waiting)
                if not self._scheduled:
                    return
                try:
                    self._thread.put(self._next_batch)
                    return
                except RuntimeError:  # stopped meanwhile: the rest runs here
                    pass

    def _run(self, batch: list[Unit]) -> None:
        try:
            self._together(batch)
        except BaseException as exc:
            for unit in batch:
                if unit.error is None:
                    unit.error = exc
        _post(batch)

    def _together(self, ready: list[Unit]) -> None:
        with self._connection() as conn, conn.begin():
            # Begun here: a SAVEPOINT that opened the transaction would commit it when released.
            # IMMEDIATE: the write lock is waited for once, by the batch (another process may
            # hold it), not by each unit's first write in turn.
            # On the driver: a statement through SQLAlchemy costs more than the BEGIN itself.
            conn.connection.driver_connection.execute("BEGIN IMMEDIATE")  # type: ignore[union-attr]
            if len(ready) == 1:  # alone, its failure is the transaction's: no savepoint to pay for
                ready[0].context.run(ready[0].run, conn)
            else:
                for unit in ready:
                    savepoint = conn.begin_nested()
                    try:
                        unit.context.run(unit.run, conn)
                    except Exception as exc:
                        unit.error = exc
                        savepoint.rollback()  # what raises here fails the whole batch
                    else:
                        savepoint.commit()
