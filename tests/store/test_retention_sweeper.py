"""The retention sweeper's two promises to the database: expired threads are found through the
index (no scan of the threads), and one sweeper runs at a time across processes and replicas
(PostgreSQL's advisory lock, SQLite's file lock), each held by something other than this process."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text

from pioneer_grpc.models.registry import packaged_registry
from pioneer_grpc.store import retention
from pioneer_grpc.store.engine import create_engine
from pioneer_grpc.store.locks import advisory_key
from pioneer_grpc.store.port import Expiry
from pioneer_grpc.store.sql import SqlStore, open_store
from tests.databases import fresh_postgres_database, migrated_sqlite


@pytest.fixture(params=["sqlite", "postgres"])
async def sql_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqlStore]:
    if request.param == "sqlite":
        await migrated_sqlite(tmp_path / "r.db")
        store = open_store(
            create_engine(f"sqlite+aiosqlite:///{tmp_path / 'r.db'}"), packaged_registry().tokenizer_of
        )
        yield store
        await store.close()
        return
    async with fresh_postgres_database(migrated=True) as url:
        store = open_store(create_engine(url), packaged_registry().tokenizer_of)
        yield store
        await store.close()


def _plans(conn: Any) -> list[str]:
    """The plan of each statement a listing of expired threads runs."""
    statements: list[tuple[str, Any]] = []

    def grab(_conn: Any, _cursor: Any, statement: str, params: Any, _context: Any, _many: bool) -> None:
        if not statement.startswith("EXPLAIN"):
            statements.append((statement, params))

    event.listen(conn, "before_cursor_execute", grab)
    try:
        # Threads of their own retention exist, so the listing reads each of them too.
        conn.exec_driver_sql(
            "INSERT INTO threads (thread_id, max_context_tokens, response_reserve_tokens, model, "
            "summary_model, created_at, updated_at, retention_days) VALUES "
            "('own', 8000, 1000, '', '', '2026-01-01', '2026-01-01', 7)"
        )
        statements.clear()
        retention.expired_in(conn, Expiry(datetime.now(UTC), 30), 10)
    finally:
        event.remove(conn, "before_cursor_execute", grab)
    plans = []
    postgres = conn.dialect.name == "postgresql"
    if postgres:
        # On a table this small any plan is cheap: what matters is that the index can serve it.
        conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
    for statement, params in statements:
        explain = "EXPLAIN " if postgres else "EXPLAIN QUERY PLAN "
        rows = conn.exec_driver_sql(explain + statement, params).fetchall()
        plans.append(" ".join(str(row[-1]) for row in rows))
    return plans


async def test_expired_threads_are_found_through_the_index(sql_store: SqlStore) -> None:
    async with sql_store.engine.begin() as conn:
        plans = await conn.run_sync(_plans)
    assert len(plans) == 3  # the server's retention, the distinct own ones, the threads of 7 days
    for plan in plans:
        assert "ix_threads_retention" in plan, plan
        assert "Seq Scan" not in plan and "SCAN threads" not in plan, plan


async def test_postgres_one_sweeper_across_replicas() -> None:
    async with fresh_postgres_database(migrated=True) as url:
        store = open_store(create_engine(url), packaged_registry().tokenizer_of)
        # Another replica: a connection of its own holding the sweeper's advisory lock.
        key = advisory_key(retention.SWEEPER_LOCK)
        try:
            async with store.engine.connect() as replica:
                await replica.execute(text("SELECT pg_advisory_lock(:k)"), {"k": key})
                await replica.commit()
                async with store.retention.sweep_lock() as held:
                    assert not held
                await replica.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
                await replica.commit()
            async with store.retention.sweep_lock() as held:
                assert held
        finally:
            await store.close()


async def test_sqlite_one_sweeper_across_worker_processes(tmp_path: Path) -> None:
    database = tmp_path / "w.db"
    await migrated_sqlite(database)
    store = open_store(create_engine(f"sqlite+aiosqlite:///{database}"), packaged_registry().tokenizer_of)
    offset = advisory_key(retention.SWEEPER_LOCK) & 0x7FFFFFFF
    worker = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import sys, fcntl, os\n"
        f"fd = os.open({str(database) + '.thread-locks'!r}, os.O_RDWR | os.O_CREAT)\n"
        f"fcntl.lockf(fd, fcntl.LOCK_EX, 1, {offset})\n"
        "print('held', flush=True)\n"
        "sys.stdin.readline()\n",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert worker.stdout is not None and worker.stdin is not None
    try:
        assert await worker.stdout.readline() == b"held\n"
        async with store.retention.sweep_lock() as held:
            assert not held
    finally:
        worker.stdin.write(b"done\n")
        await worker.wait()
    async with store.retention.sweep_lock() as held:
        assert held
    await store.close()
