"""PostgreSQL for tests: the cluster `make test` starts (PIONEER_TEST_PG_URL), a fresh database per test.

Under CI=true a missing PostgreSQL fails, as does any other skip (tests/ci_guard.py).
"""

from __future__ import annotations

import os
import uuid

import pytest

PG_URL_ENV = "PIONEER_TEST_PG_URL"


def require_postgres() -> str:
    url = os.environ.get(PG_URL_ENV)
    if url:
        return url
    if os.environ.get("CI") == "true":
        pytest.fail(f"{PG_URL_ENV} is not set: under CI the PostgreSQL tests must run (use `make test`)")
    pytest.skip(f"{PG_URL_ENV} not set; `make test` starts PostgreSQL")


class fresh_postgres_database:
    """Creates an empty database on the test cluster and drops it afterwards."""

    def __init__(self) -> None:
        self.admin_url = require_postgres()
        self.name = "t_" + uuid.uuid4().hex[:16]

    async def __aenter__(self) -> str:
        import asyncpg

        conn = await asyncpg.connect(self.admin_url.replace("postgresql+asyncpg", "postgresql"))
        try:
            await conn.execute(f'CREATE DATABASE "{self.name}"')
        finally:
            await conn.close()
        base = self.admin_url.rsplit("/", 1)[0]
        return f"{base}/{self.name}"

    async def __aexit__(self, *exc: object) -> None:
        import asyncpg

        conn = await asyncpg.connect(self.admin_url.replace("postgresql+asyncpg", "postgresql"))
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        finally:
            await conn.close()
