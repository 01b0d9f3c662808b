"""The store port's contract: one suite, three stores (in memory, SQLite, PostgreSQL).

Every test in this folder takes `store` and runs once per implementation: what one
answers, every one answers. The SQL stores start on a database migrated to head
(a copy of one migrated once per test process, tests/databases.py). Under CI=true
the PostgreSQL run cannot be skipped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pioneer_grpc.models.registry import packaged_registry
from pioneer_grpc.store.engine import create_engine
from pioneer_grpc.store.memory import MemoryStore
from pioneer_grpc.store.port import Store
from pioneer_grpc.store.sql import open_store
from tests.ci_guard import pytest_runtest_makereport  # noqa: F401  (under CI=true a skip fails)
from tests.databases import fresh_postgres_database, migrated_sqlite


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    tokenizer_of = packaged_registry().tokenizer_of
    if request.param == "memory":
        yield MemoryStore(tokenizer_of)
        return
    if request.param == "sqlite":
        await migrated_sqlite(tmp_path / "contract.db")
        engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'contract.db'}")
        sql = open_store(engine, tokenizer_of)
        yield sql
        await sql.close()
        return
    async with fresh_postgres_database(migrated=True) as url:
        engine = create_engine(url)
        sql = open_store(engine, tokenizer_of)
        yield sql
        await sql.close()
