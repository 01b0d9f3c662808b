"""Fixtures of the manifest event tests."""

from __future__ import annotations

import pytest

from tests.conftest import fresh_postgres_database


@pytest.fixture
async def postgres_url():
    """A fresh PostgreSQL database only (no SQLite variant), migrated to head; request it before
    `server_factory`."""
    async with fresh_postgres_database(migrated=True) as url:
        yield url
