"""Run a whole transaction as one synchronous function: one thread hop on SQLite, none on PostgreSQL.

A unit of work (an append, a round's commit) is a few statements. Through aiosqlite
each statement costs several hand-offs between the event loop and the driver's
thread, and on a busy machine each hand-off waits for a time slice; so on SQLite
the unit runs as one function in a thread that owns a plain (synchronous) sqlite3
connection to the same file: one hand-off for the unit; units that wait for that
thread together commit together, one fsync for all (store/batches.py). On PostgreSQL
the same function runs on an asyncpg connection, on the event loop, in one greenlet
of SQLAlchemy's bridge (as its `run_sync` runs one) from the connection's checkout to
its return.

    runner = TransactionRunner(engine)
    # work(conn) in one transaction; then the session setting `setting` names (a name, or a
    # function of the result; "" names none), as the commit left it
    result, value = await runner.transact(work, setting)

`runner.read(work)` runs `work(conn)` the same way but outside a transaction, for reads
(a history's state, a round's reads): on PostgreSQL no BEGIN and no ROLLBACK. `runner.alone(work)`
does so for a write of one statement that commits by itself (a completion, a round's commit
on PostgreSQL): no BEGIN and no COMMIT, one round trip where a transaction takes three; on
SQLite a transaction as `transact`'s.

Every function given is the store's own: a unit reads and writes and returns, and never
calls back into its caller (store/port.py).

The SQLite connection is a second connection to the store in this process; the
two (and those of other worker processes) meet on SQLite's lock with the busy
timeout, as separate processes always do. Every write transaction starts with the
write lock (BEGIN IMMEDIATE), so none fails on a stale read snapshot. The thread
keeps that one connection open between transactions (taking it from the pool and
giving it back cost as much Python as a unit's writes); work that fails gives it back
to the pool, which resets or discards it, and the next transaction takes another.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TypeVar

from sqlalchemy import create_engine
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import greenlet_spawn

from pioneer_grpc.store.batches import Batches, settle
from pioneer_grpc.store.engine import (
    LOCK_WAIT_SECONDS,
    announced_settings,
    sqlite_pragmas,
    sqlite_synchronous,
)
from pioneer_grpc.store.work import UnitFuture, run_to_end
from pioneer_grpc.store.worker import Worker

R = TypeVar("R")


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
        self, work: Callable[[Connection], R], setting: str | Callable[[R], str] = ""
    ) -> tuple[R, str | None]:
        """`work(conn)`, committed when it returns, rolled back when it raises; and then the session
        setting `setting` names (or `setting(result)`) as the commit left it.

        It runs to its end even when the caller is cancelled (store/work.py), and driver failures
        leave it as domain errors. On PostgreSQL a trigger that runs inside COMMIT can leave a
        value in a setting and announce it in a NOTICE (migrations 0005 and 0012: the event id it
        drew), which arrives with the COMMIT's answer (store/engine.py keeps it): no round trip.
        The value is None on SQLite, where nothing runs at commit, when `setting` names none, and
        when the commit announced none.
        """
        if self._sync is None:
            return await run_to_end(self._transact_async(work, setting))
        # In SQLite's thread, committed with the units waiting beside it (store/batches.py).
        committed = await run_to_end(self._batches.submit(work))
        return committed, None

    async def read(self, work: Callable[[Connection], R]) -> R:
        """`work(conn)` outside a transaction: for a read of one statement, which is its own snapshot.

        On SQLite nothing is begun or committed around it (one hop, and only the
        statement's own work there); on PostgreSQL it runs in one greenlet, as `transact` does.
        """
        if self._sync is None:
            return await run_to_end(self._read_async(work))

        def run() -> R:
            with self._thread_connection() as conn:
                result = work(conn)
                conn.rollback()  # what SQLAlchemy began for the read, if anything
                return result

        return await run_to_end(self._in_thread(run))

    async def alone(self, work: Callable[[Connection], R]) -> R:
        """`work(conn)`, committed as it returns: for a write of one statement, which on PostgreSQL
        is its own transaction (no BEGIN, no COMMIT). So `work` must not write in a second statement,
        nor raise after its statement wrote: nothing would roll back what the first committed. On
        SQLite it runs in a transaction, as `transact` runs one."""
        if self._postgres:
            return await run_to_end(self._read_async(work))
        result, _ = await self.transact(work)
        return result

    async def alone_announcing(
        self, work: Callable[[Connection], R], setting: Callable[[R], str]
    ) -> tuple[R, str | None]:
        """`alone`, and the session setting `setting(result)` names as the statement's own commit left
        it and announced (PostgreSQL: a trigger inside that commit, as in `transact`; "" names none).
        On SQLite `transact`'s: a transaction, and no setting."""
        if not self._postgres:
            result, _ = await self.transact(work)
            return result, None
        return await run_to_end(greenlet_spawn(self._announcing, work, setting))

    def _announcing(
        self, work: Callable[[Connection], R], setting_of: Callable[[R], str]
    ) -> tuple[R, str | None]:
        with self._engine.sync_engine.connect() as conn:
            # One statement is its own transaction: no BEGIN before it, no COMMIT after.
            conn.execution_options(isolation_level="AUTOCOMMIT")
            announced = announced_settings(conn)
            announced.clear()  # what an earlier transaction on this connection announced
            result = work(conn)
            setting = setting_of(result)
            return result, announced.get(setting) if setting else None

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
        self, work: Callable[[Connection], R], setting_of: str | Callable[[R], str]
    ) -> tuple[R, str | None]:
        return await greenlet_spawn(self._transaction, work, setting_of)

    def _transaction(
        self, work: Callable[[Connection], R], setting_of: str | Callable[[R], str]
    ) -> tuple[R, str | None]:
        """The transaction, from the connection's checkout to its return, in one greenlet of
        SQLAlchemy's bridge (its async API spawns one for each of connect, begin, `run_sync`,
        commit and close): each of its waits is awaited on the event loop through `await_only`."""
        value = None
        with self._engine.sync_engine.connect() as conn:
            announced = announced_settings(conn) if self._postgres else {}
            announced.clear()  # what an earlier transaction on this connection announced
            with conn.begin():
                result = work(conn)
            setting = setting_of(result) if callable(setting_of) else setting_of
            if setting and self._postgres:
                value = announced.get(setting)
        return result, value

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
