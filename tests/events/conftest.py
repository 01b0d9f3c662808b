"""`pg_server` with the database set up first, so it is dropped only after the server stopped.

(The shared fixture requests the server factory first; its database is then dropped
under a running server, whose LISTEN connection would log a lost connection.)
"""

from __future__ import annotations

import pytest


@pytest.fixture
async def pg_server(database_url, server_factory):
    return await server_factory(database_url=database_url)
