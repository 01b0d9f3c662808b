"""Run a whole transaction as one synchronous function: one thread hop on SQLite, none on PostgreSQL.

A PrepareTurn round is a dozen statements. Through aiosqlite each statement
costs several hand-offs between the event loop and the driver's thread, and on a
busy machine each hand-off waits for a time slice; so on SQLite the round runs
as one function in a thread that owns a plain (synchronous) sqlite3 connection
to the same file: one hand-off for the round; units that wait for that thread
together commit together, one fsync for all (store/batches.py). On PostgreSQL the
same function runs on an asyncpg connection, on the event loop, in one greenlet of
SQLAlchemy's bridge (as its `run_sync` runs one) from the connection's checkout to
its return.

    runner = TransactionRunner.for_engine(engine)
    # prepare() -> p, then work(conn, p) in one transaction; then the session setting
    # `setting` names (a name, or a function of the result; "" names none), as the commit left it
    result, value = await runner.transact(prepare, work, setting)

`runner.read(work)` runs `work(conn)` the same way but outside a transaction, for a
read of one statement (a history load's state): on PostgreSQL no BEGIN and no
ROLLBACK, the statement alone. `runner.alone(work)` does so for a write of one
statement that commits by itself (a completion): on PostgreSQL no BEGIN and no COMMIT,
one round trip where a transaction takes three; on SQLite a transaction as `transact`'s.

`prepare` is blocking work that must happen before the transaction (a compile
reading files): on SQLite it runs in the same thread just before, on PostgreSQL
in a worker thread. `then` is blocking work on what `work` read that decides
whether the transaction commits (a round's provider body, which may be refused):
on SQLite it runs in the same thread just after `work`, on PostgreSQL in a
worker thread while the transaction waits; its locks are held meanwhile, so it
must be short. `beside` is blocking work on the result that decides nothing and needs no lock
(encoding the answer): it begins on the event loop (or, when not small, in a worker thread)
as the COMMIT begins, and runs beside it (on SQLite while the thread commits, on PostgreSQL
while the COMMIT is awaited); the caller is answered once both ended, with the COMMIT's
error when it failed. It must not fail.

On PostgreSQL each of those hops costs more than a small step's own work (a
hand-off to a worker thread and a wake-up back, each contending for the GIL with
the event loop, which serves every other call meanwhile); so a unit may say with
`OnLoop` which of its steps are small enough to run right on the event loop. A step
it does not name as small hops as described.

The SQLite connection is a second connection to the store in this process; the
two (and those of other worker processes) meet on SQLite's lock with the busy
timeout, as separate processes always do. Every write transaction starts with a
write, so none fails on a stale read snapshot. The thread keeps that one
connection open between transactions (taking it from the pool and giving it back
cost as much Python as a round's writes); work that fails gives it back to the
pool, which resets or discards it, and the next transaction takes another.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Generic, TypeVar

from sqlalchemy import create_engine
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import await_only, greenlet_spawn

from pioneer_grpc.history.tokens import with_encodings
from pioneer_grpc.store.batches import Batches, settle
from pioneer_grpc.store.engine import (
    LOCK_WAIT_SECONDS,
    announced_settings,
    sqlite_pragmas,
    sqlite_synchronous,
)
from pioneer_grpc.store.work import UnitFuture, begun_beside, run_to_end, unread
from pioneer_grpc.store.worker import Worker

P = TypeVar("P")
R = TypeVar("R")


def nothing() -> None:
    """The `prepare` of a unit of work with nothing to do before its transaction (no thread hop)."""


def no_setting(_result: object) -> str:
    """The `setting` of a unit of work that reads no session setting after its commit."""
    return ""


def _never(_result: object) -> bool:
    return False


@dataclass(frozen=True)
class OnLoop(Generic[R]):
    """Which blocking steps of a unit run on the event loop rather than in a worker thread:
    `prepare` and `then` on PostgreSQL, when true or their predicate holds for the result they are
    given; `beside` on either database when its predicate holds. Only for steps bounded to a
    fraction of a millisecond or so; by default all hop."""

    prepare: bool = False
    then: Callable[[R], bool] = _never
    beside: Callable[[R], bool] = _never


ALL_HOP: OnLoop[object] = OnLoop()


class TransactionRunner:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._postgres = engine.dialect.name == "postgresql"
        self._sync: Engine | None = None
        # Used by the SQLite thread only; opened on its first transaction.
        self._sync_conn: Connection | None = None
        self._thread: Worker | None = None
        self._closed = False
        if engine.dialect.name == "sqlite" and engine.url.database not in (None, "", ":memory:"):
            url = engine.url.set(drivername="sqlite")
            self._sync = create_engine(
                url,
                connect_args={"timeout": LOCK_WAIT_SECONDS, "check_same_thread": False},
                pool_size=1,
                max_overflow=0,
                hide_parameters=True,
            )
            sqlite_pragmas(self._sync, sqlite_synchronous(engine))
            self._thread = Worker("pioneer-sqlite-round")
            self._batches = Batches(self._thread, self._thread_connection)

    async def transact(
        self,
        prepare: Callable[[], P],
        work: Callable[[Connection, P], R],
        setting: str | Callable[[R], str] = no_setting,
        *,
        then: Callable[[R], R] | None = None,
        beside: Callable[[R], R] | None = None,
        on_loop: OnLoop[R] = ALL_HOP,  # type: ignore[assignment]
    ) -> tuple[R, str | None]:
        """`work(conn, prepare())`, committed when it returns, rolled back when it raises; and then
        the session setting `setting` names (or `setting(result)`) as the commit left it. With
        `then`, the result is `then(work(...))`, run before the commit off the event loop; what it
        raises rolls back. With `beside`, the result is `beside(...)` of that, run beside the
        commit (the module's docstring says where). `on_loop` names the steps small enough to run
        on the event loop.

        It runs to its end even when the caller is cancelled (store/work.py), and
        driver failures leave it as domain errors. No token encoding is loaded inside it:
        a count that needs one not loaded yet rolls it back, and it runs again once that
        encoding is loaded off the event loop (history/tokens.py `with_encodings`; `beside`
        must not count in one, since its transaction may have committed). On PostgreSQL a trigger that runs
        inside COMMIT can leave a value in a setting and announce it in a NOTICE
        (migrations 0005 and 0012: the event id it drew), which arrives with the
        COMMIT's answer (store/engine.py keeps it): no round trip. The value is None on
        SQLite, where nothing runs at commit, when `setting` names none, and when the
        commit announced none.
        """
        if self._sync is None:
            return await with_encodings(
                lambda: run_to_end(self._transact_async(prepare, work, setting, then, beside, on_loop))
            )
        # In SQLite's thread, committed with the units waiting beside it (store/batches.py).
        committed = await with_encodings(
            lambda: run_to_end(self._batches.submit(prepare, work, then, beside, on_loop.beside))
        )
        return committed, None

    async def read(self, work: Callable[[Connection], R]) -> R:
        """`work(conn)` outside a transaction: for a read of one statement, which is its own snapshot.

        On SQLite nothing is begun or committed around it (one hop, and only the
        statement's own work there); on PostgreSQL it runs in one greenlet, as `transact` does.
        """
        if self._sync is None:
            return await with_encodings(lambda: run_to_end(self._read_async(work)))

        def run() -> R:
            with self._thread_connection() as conn:
                result = work(conn)
                conn.rollback()  # what SQLAlchemy began for the read, if anything
                return result

        return await with_encodings(lambda: run_to_end(self._in_thread(run)))

    async def alone(self, work: Callable[[Connection], R]) -> R:
        """`work(conn)`, committed as it returns: for a write of one statement, which on PostgreSQL
        is its own transaction (no BEGIN, no COMMIT). So `work` must not write in a second statement,
        nor raise after its statement wrote: nothing would roll back what the first committed. On
        SQLite it runs in a transaction, as `transact` runs one."""
        if self._postgres:
            return await with_encodings(lambda: run_to_end(self._read_async(work)))
        result, _ = await self.transact(nothing, lambda conn, _: work(conn))
        return result

    def _in_thread(self, run: Callable[[], R]) -> UnitFuture[R]:
        """`run` on the SQLite thread, in the caller's context (its trace span, as asyncio.to_thread
        would do); a UnitFuture of its own, which run_to_end awaits as it is."""
        assert self._thread is not None
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        future: UnitFuture[R] = UnitFuture(loop=loop)

        def job() -> None:
            result, error = None, None
            try:
                result = context.run(run)
            except BaseException as exc:
                error = exc
            try:
                loop.call_soon_threadsafe(settle, [(future, result, error)])
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass

        self._thread.put(job)
        return future

    async def _read_async(self, work: Callable[[Connection], R]) -> R:
        return await greenlet_spawn(self._read_in_greenlet, work)

    def _read_in_greenlet(self, work: Callable[[Connection], R]) -> R:
        with self._engine.sync_engine.connect() as conn:
            if self._postgres:
                # One statement is its own snapshot: no BEGIN before it, no ROLLBACK after.
                conn.execution_options(isolation_level="AUTOCOMMIT")
            return work(conn)

    async def _transact_async(
        self,
        prepare: Callable[[], P],
        work: Callable[[Connection, P], R],
        setting_of: str | Callable[[R], str],
        then: Callable[[R], R] | None,
        beside: Callable[[R], R] | None,
        on_loop: OnLoop[R],
    ) -> tuple[R, str | None]:
        if prepare is nothing or on_loop.prepare:
            prepared = prepare()
        else:
            prepared = await asyncio.to_thread(prepare)
        result, value, begun = await greenlet_spawn(
            self._transaction, work, prepared, setting_of, then, beside, on_loop
        )
        if begun is not None:
            result = await begun
        return result, value

    def _transaction(
        self,
        work: Callable[[Connection, P], R],
        prepared: P,
        setting_of: str | Callable[[R], str],
        then: Callable[[R], R] | None,
        beside: Callable[[R], R] | None,
        on_loop: OnLoop[R],
    ) -> tuple[R, str | None, asyncio.Future[R] | None]:
        """The transaction, from the connection's checkout to its return, in one greenlet of
        SQLAlchemy's bridge (its async API spawns one for each of connect, begin, `run_sync`,
        commit and close): each of its waits is awaited on the event loop through `await_only`.
        `beside` begins as the COMMIT is sent; its outcome, a future, is the third value."""
        value = None
        begun = None
        try:
            with self._engine.sync_engine.connect() as conn:
                announced = announced_settings(conn) if self._postgres else {}
                announced.clear()  # what an earlier transaction on this connection announced
                with conn.begin():
                    result = work(conn, prepared)
                    if then is not None and on_loop.then(result):
                        result = then(result)
                    elif then is not None:
                        result = await_only(asyncio.to_thread(then, result))
                    if beside is not None:
                        begun = begun_beside(beside, result, on_loop.beside(result))
                setting = setting_of(result) if callable(setting_of) else setting_of
                if setting and self._postgres:
                    value = announced.get(setting)
        except BaseException:
            if begun is not None:
                unread(begun)
            raise
        return result, value, begun

    @contextmanager
    def _thread_connection(self) -> Iterator[Connection]:
        """The SQLite thread's connection (in that thread only), given back to the pool when work fails:
        the next transaction starts on a connection the pool has reset, as it always did."""
        if self._sync_conn is None:
            assert self._sync is not None
            self._sync_conn = self._sync.connect()
        try:
            yield self._sync_conn
        except BaseException:
            self._close_thread_connection()
            raise

    def _close_thread_connection(self) -> None:
        conn, self._sync_conn = self._sync_conn, None
        if conn is not None:
            with suppress(Exception):  # a failing database: the pool discards the connection
                conn.close()

    async def close(self) -> None:
        """Closes the SQLite thread's connection and the thread; again, it does nothing."""
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            await self._in_thread(self._close_thread_connection)
            self._thread.stop()
        if self._sync is not None:
            self._sync.dispose()
