"""Engine creation for SQLite (default) and PostgreSQL, the default URL, and what the pool holds.

Every wait on the database is bounded, so a unit of work that runs to its end
(store/work.py) ends in bounded time: a connection from the pool, a connect, a
lock, a statement. Parameters never appear in an exception's text
(`hide_parameters`): they are conversation content.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

# Waiting for the async engine's one SQLite connection, or for one of PostgreSQL's pool.
POOL_WAIT_SECONDS = 30
# A lock held by another writer (SQLite busy handler, PostgreSQL lock_timeout).
LOCK_WAIT_SECONDS = 10
CONNECT_SECONDS = 5
# Any one PostgreSQL statement; the driver cancels it on the server when exceeded.
STATEMENT_SECONDS = 30
# A PostgreSQL session idle inside a transaction this long is ended by the server.
IDLE_IN_TRANSACTION_SECONDS = 60
SQLITE_POOL_SIZE = 1
# PostgreSQL connections open at most, as before (10 kept and 20 more): all are kept once opened.
# A connection over the kept ones was closed as it came back whenever the kept ones were idle, so
# with more units at once than were kept, the pool kept opening connections (each a connect, a
# login, the driver's type reads and every statement prepared again on it): 214 of them in
# 16 agent loops' 800 turns.
PG_POOL_SIZE = 30
PG_MAX_OVERFLOW = 0
# SQLite's `synchronous` (docs/operating-durability.md): FULL syncs the WAL at every commit, so an
# acknowledged write survives a power loss; NORMAL syncs only at checkpoints (faster commits, and
# the last commits before a power loss may be gone, the database still consistent).
SQLITE_SYNCHRONOUS = ("FULL", "NORMAL")
DEFAULT_SQLITE_SYNCHRONOUS = "FULL"
# How much a full disk can hold back (docs/operating-durability.md): a checkpoint copies the WAL's
# pages into the database file and needs room there for the ones it lacks. A commit checkpoints
# once the WAL holds this many pages (SQLite's default is 1,000: 4 MB), so that room stays about
# 1 MB; and a WAL that was let go is cut back to JOURNAL_SIZE_LIMIT_BYTES instead of keeping its
# largest size.
WAL_AUTOCHECKPOINT_PAGES = 256
JOURNAL_SIZE_LIMIT_BYTES = 1024 * 1024


def default_database_url(home: Path) -> str:
    return f"sqlite+aiosqlite:///{home / 'pioneer.db'}"


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def is_postgres(url: str) -> bool:
    return url.startswith("postgresql")


def create_engine(url: str, sqlite_synchronous: str = DEFAULT_SQLITE_SYNCHRONOUS) -> AsyncEngine:
    """`sqlite_synchronous`: FULL or NORMAL, for a SQLite URL (every connection of the store)."""
    if is_sqlite(url):
        engine = _sqlite_engine(url, sqlite_synchronous)
    elif is_postgres(url):
        engine = create_async_engine(
            url,
            pool_size=PG_POOL_SIZE,
            max_overflow=PG_MAX_OVERFLOW,
            pool_timeout=POOL_WAIT_SECONDS,
            hide_parameters=True,
            connect_args={
                "timeout": CONNECT_SECONDS,
                "command_timeout": STATEMENT_SECONDS,
                "server_settings": {
                    # The NOTICEs announcing settings (below) reach the session whatever a role or
                    # database sets.
                    "client_min_messages": "notice",
                    # Every statement is prepared once per connection and looks rows up by key:
                    # its one generic plan serves every call. Left to choose, PostgreSQL plans the
                    # history's state read anew at each call (0.3 ms of a 0.47 ms statement).
                    "plan_cache_mode": "force_generic_plan",
                    "lock_timeout": str(LOCK_WAIT_SECONDS * 1000),
                    "idle_in_transaction_session_timeout": str(IDLE_IN_TRANSACTION_SECONDS * 1000),
                },
            },
        )
        _closed_connections_replaced(engine.sync_engine)
        _settings_announced(engine.sync_engine)
    else:
        raise ValueError(
            f"unsupported database URL {url!r}: use sqlite+aiosqlite:/// or postgresql+asyncpg://"
        )
    _count_connections(engine)
    return engine


def _closed_connections_replaced(engine: Engine) -> None:
    """A pooled PostgreSQL connection the server closed (a restart, a terminated backend) is replaced
    at checkout, without a round trip: the driver reads the server's goodbye as it comes.

    A ping per checkout (`pool_pre_ping`) cost three round trips per unit of work. A
    connection that breaks unannounced fails its statement instead: that unit answers
    UNAVAILABLE, and SQLAlchemy then replaces every connection the pool held.
    """

    @event.listens_for(engine, "checkout")
    def _refuse_closed(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
        if dbapi_conn.driver_connection.is_closed():
            raise DisconnectionError("the server closed this connection")


# By PostgreSQL connection (its pool record), each session setting a trigger announced in a NOTICE
# "name: value" as it left it (migration 0012 announces the event id drawn at commit).
_ANNOUNCED = "pioneer_announced_settings"


def _settings_announced(engine: Engine) -> None:
    """Keeps what each connection's session announces: read after a COMMIT without a round trip.

    asyncpg hands a NOTICE to its listeners through the event loop, ahead of the answer
    to the statement that raised it (the notice comes first on the wire, and the loop
    runs its callbacks in order), so a COMMIT's notices are kept before the committer
    resumes.
    """

    @event.listens_for(engine, "connect")
    def _hear(dbapi_conn: Any, record: Any) -> None:
        heard: dict[str, str] = {}
        record.info[_ANNOUNCED] = heard

        def on_notice(_driver: Any, message: Any) -> None:
            name, colon, value = str(message.message).partition(": ")
            if colon:
                heard[name] = value

        dbapi_conn.driver_connection.add_log_listener(on_notice)


def announced_settings(conn: Connection) -> dict[str, str]:
    """The settings `conn`'s PostgreSQL session announced since the dict was last cleared."""
    heard: dict[str, str] = conn.connection.info.setdefault(_ANNOUNCED, {})
    return heard


def _sqlite_engine(url: str, synchronous: str) -> AsyncEngine:
    # One connection for this engine: SQLite has a single writer anyway. Queueing
    # for the connection in asyncio is fair and immediate, where concurrent
    # connections would wait on the database lock in SQLite's busy handler, which
    # sleeps up to 100 ms between retries. The store's runner (store/runner.py)
    # holds a second, synchronous connection for whole transactions; the two meet
    # on SQLite's lock, as the connections of other worker processes do.
    engine = create_async_engine(
        url,
        connect_args={"timeout": LOCK_WAIT_SECONDS},
        pool_size=SQLITE_POOL_SIZE,
        max_overflow=0,
        pool_timeout=POOL_WAIT_SECONDS,
        hide_parameters=True,
    )

    sqlite_pragmas(engine.sync_engine, synchronous)
    return engine


_SYNCHRONOUS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def sqlite_synchronous(engine: AsyncEngine) -> str:
    """The `synchronous` setting the store's SQLite connections are opened with."""
    return _SYNCHRONOUS.get(engine.sync_engine, DEFAULT_SQLITE_SYNCHRONOUS)


def sqlite_pragmas(engine: Engine, synchronous: str = DEFAULT_SQLITE_SYNCHRONOUS) -> None:
    """WAL (readers never wait for the writer, correct across processes), `synchronous` (durability),
    a writer waits its turn, and the WAL stays small (checkpoints every WAL_AUTOCHECKPOINT_PAGES)."""
    if synchronous not in SQLITE_SYNCHRONOUS:
        raise ValueError(f"synchronous must be one of {', '.join(SQLITE_SYNCHRONOUS)}, not {synchronous!r}")
    _SYNCHRONOUS[engine] = synchronous

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={LOCK_WAIT_SECONDS * 1000}")
        cursor.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
        cursor.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT_BYTES}")
        cursor.close()


def session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


@dataclass(frozen=True)
class PoolState:
    """`size` connections may be kept; `open` exist now; `checked_out` are in use."""

    size: int
    max_overflow: int
    checked_out: int
    open: int


class _Opened:
    def __init__(self) -> None:
        self.count = 0


_OPENED: weakref.WeakKeyDictionary[Any, _Opened] = weakref.WeakKeyDictionary()


def _count_connections(engine: AsyncEngine) -> None:
    """Counts DBAPI connections opened and not yet closed (the pool's own gauges only see its queue)."""
    opened = _Opened()
    target = engine.sync_engine

    def connected(*_args: Any) -> None:
        opened.count += 1

    def closed(*_args: Any) -> None:
        opened.count -= 1

    event.listen(target, "connect", connected)
    event.listen(target, "close", closed)
    event.listen(target, "close_detached", closed)
    _OPENED[target] = opened


def pool_state(engine: AsyncEngine) -> PoolState:
    pool: Any = engine.sync_engine.pool
    opened = _OPENED[engine.sync_engine]
    return PoolState(
        size=int(pool.size()),
        max_overflow=int(getattr(pool, "_max_overflow", 0)),
        checked_out=int(pool.checkedout()),
        open=opened.count,
    )
