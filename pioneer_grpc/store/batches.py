"""SQLite's units of work, committed together when they wait together: one fsync for a batch.

With `synchronous=FULL` every commit waits for the disk; the runner's one thread
commits for every caller in the process, so under load the callers queue behind
each other's fsyncs. A unit that arrives while another runs waits in a queue; the
thread then takes every unit waiting (up to MAX_UNITS) as one batch: each one's
`prepare` first (outside the transaction), then one transaction in which each
unit runs inside a SAVEPOINT of its own, then one COMMIT. A unit that raises is
rolled back to its savepoint and answered with its error; the others go on. A
failure that leaves no savepoint to roll back to, or a failing COMMIT, fails
every unit of the batch, and nothing of it is stored. Each caller is answered
once the batch committed: nothing is acknowledged before it is durable. A unit
alone is a batch of one on the same path, without a savepoint (its failure is
the transaction's). Each unit runs in its caller's context (its trace span).
A unit's `beside` (store/runner.py) begins on its caller's event loop as the
batch's COMMIT begins, and runs while this thread commits.

Callers are answered with one wake-up of their event loop per batch, and their
`beside` begun with one more.
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

from pioneer_grpc.store.work import UnitFuture, begun_beside, outcome, unread
from pioneer_grpc.store.worker import Worker

# A batch's units answer only once all of them ran: bounded, so the first waits for few others.
MAX_UNITS = 16


@dataclass
class Unit:
    prepare: Callable[[], Any]
    work: Callable[[Connection, Any], Any]
    then: Callable[[Any], Any] | None
    beside: Callable[[Any], Any] | None
    beside_small: Callable[[Any], bool]
    loop: asyncio.AbstractEventLoop
    future: UnitFuture[Any]
    context: contextvars.Context = field(default_factory=contextvars.copy_context)
    prepared: Any = None
    result: Any = None
    error: BaseException | None = None
    # `beside`'s outcome, set on the caller's loop once begun there.
    begun: asyncio.Future[Any] | None = None

    def run(self, conn: Connection) -> None:
        result = self.work(conn, self.prepared)
        self.result = result if self.then is None else self.then(result)

    def begin_beside(self) -> None:
        """On the caller's loop: `beside` begun on the result (store/work.py `begun_beside`)."""
        assert self.beside is not None
        try:
            self.begun = begun_beside(self.beside, self.result, self.beside_small(self.result))
        except Exception as exc:  # it must not fail; if it does, its caller hears it
            self.begun = self.loop.create_future()
            self.begun.set_exception(exc)

    def answer(self) -> None:
        """On the caller's loop, once the batch committed (or failed): its caller answered, when
        `beside` ended too."""
        begun = self.begun
        if self.error is not None or begun is None:
            if begun is not None:
                unread(begun)
            self.future.end(self.result, self.error)
        elif begun.done():
            self.future.end(*outcome(begun))
        else:
            begun.add_done_callback(lambda ended: self.future.end(*outcome(ended)))


def settle(answers: list[tuple[UnitFuture[Any], Any, BaseException | None]]) -> None:
    for future, result, error in answers:
        future.end(result, error)


def answer_units(units: list[Unit]) -> None:
    """On their callers' loop: each unit's caller answered (`Unit.answer`)."""
    for unit in units:
        unit.answer()


def begin_beside(units: list[Unit]) -> None:
    """On their callers' loop: each unit's `beside` begun, in its caller's context."""
    for unit in units:
        unit.context.run(unit.begin_beside)


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


def _begin_beside(units: list[Unit]) -> None:
    """The `beside` of each unit that ran, begun before the COMMIT."""
    _by_loop([unit for unit in units if unit.error is None and unit.beside is not None], begin_beside)


class Batches:
    """The queue in front of the SQLite thread. `connection()` is the thread's connection as a
    context manager (given back to the pool when what runs inside it raises)."""

    def __init__(self, thread: Worker, connection: Callable[[], AbstractContextManager[Connection]]) -> None:
        self._thread = thread
        self._connection = connection
        self._lock = threading.Lock()
        self._waiting: list[Unit] = []
        self._scheduled = False

    def submit(
        self,
        prepare: Callable[[], Any],
        work: Callable[[Connection, Any], Any],
        then: Callable[[Any], Any] | None,
        beside: Callable[[Any], Any] | None,
        beside_small: Callable[[Any], bool],
    ) -> UnitFuture[Any]:
        loop = asyncio.get_running_loop()
        unit = Unit(prepare, work, then, beside, beside_small, loop, UnitFuture(loop=loop))
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
        ready = []
        for unit in batch:
            try:
                unit.prepared = unit.context.run(unit.prepare)
                ready.append(unit)
            except BaseException as exc:
                unit.error = exc
        try:
            if ready:
                self._together(ready)
        except BaseException as exc:
            for unit in ready:
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
            _begin_beside(ready)
