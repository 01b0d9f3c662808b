"""Engine creation for SQLite (default) and PostgreSQL, and the default URL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine


def default_database_url(home: Path) -> str:
    return f"sqlite+aiosqlite:///{home / 'pioneer.db'}"


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def is_postgres(url: str) -> bool:
    return url.startswith("postgresql")


def sqlite_pragmas(engine: Engine) -> None:
    """WAL (readers never wait for the writer, correct across processes), and a writer waits its turn."""

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()


def create_engine(url: str) -> AsyncEngine:
    if is_sqlite(url):
        # One connection: a SQLite store belongs to one process, and SQLite has a
        # single writer anyway. Queueing for the connection in asyncio is fair and
        # immediate, where concurrent connections would wait on the database lock
        # in SQLite's busy handler, which sleeps up to 100 ms between retries.
        engine = create_async_engine(
            url, connect_args={"timeout": 30}, pool_size=1, max_overflow=0, pool_timeout=60
        )

        sqlite_pragmas(engine.sync_engine)
        return engine
    if is_postgres(url):
        return create_async_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True)
    raise ValueError(f"unsupported database URL {url!r}: use sqlite+aiosqlite:/// or postgresql+asyncpg://")


def session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
