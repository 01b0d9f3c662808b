"""`pg_server` with the database set up first, so it is dropped only after the server stopped.

(The shared fixture requests the server factory first; its database is then dropped
under a running server, whose LISTEN connection would log a lost connection.)
"""

from __future__ import annotations

import pytest

from tests.conftest import fresh_postgres_database


@pytest.fixture
async def pg_server(database_url, server_factory):
    return await server_factory(database_url=database_url)


@pytest.fixture
async def postgres_url():
    """A fresh PostgreSQL database only (no SQLite variant); request it before `server_factory`."""
    async with fresh_postgres_database() as url:
        yield url
