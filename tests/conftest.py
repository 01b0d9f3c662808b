"""Shared fixtures: a real server on an ephemeral loopback port, and databases.

`database_url` is parametrised over SQLite and PostgreSQL. PostgreSQL comes from
PIONEER_TEST_PG_URL (set by `make test`, which starts a throwaway cluster); each
test gets a database of its own, already migrated to head (tests/databases.py), as
does each server started on its home's default database; `empty_database_url` is
one with nothing in it, for the migration tests. Under CI=true a missing PostgreSQL
fails, as does any other skip (tests/ci_guard.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import grpc
import pytest
from hypothesis import settings

from pioneer_grpc.client import AsyncClient
from pioneer_grpc.config import Config
from pioneer_grpc.server.app import RunningServer, start_server
from pioneer_grpc.store.engine import default_database_url
from tests.ci_guard import pytest_runtest_makereport  # noqa: F401  (the hook: a skip under CI=true fails)
from tests.databases import (
    PG_URL_ENV,
    drop_templates,
    fresh_postgres_database,
    migrated_sqlite,
    require_postgres,
)

__all__ = ["PG_URL_ENV", "fresh_postgres_database", "require_postgres"]

# The property tests draw the same examples in every run (each test seeds its own draw), as many as
# each one's settings ask, and keep no example database between runs: a run's outcome and its time
# are the tree's, not the machine's history.
settings.register_profile("pioneer", derandomize=True, database=None)
settings.load_profile("pioneer")


@pytest.fixture(scope="session", autouse=True)
def _templates_dropped() -> Iterator[None]:
    yield
    drop_templates()


@pytest.fixture(params=["sqlite", "postgres"])
async def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A database of this test's own on each backend, migrated to head."""
    if request.param == "sqlite":
        await migrated_sqlite(tmp_path / "test.db")
        yield f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"
        return
    async with fresh_postgres_database(migrated=True) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
async def empty_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A database of this test's own on each backend, with nothing in it (not even the tables)."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"
        return
    async with fresh_postgres_database() as url:
        yield url


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    """A fresh database on the test cluster, migrated to head, for tests that only make sense on
    PostgreSQL (replicas)."""
    async with fresh_postgres_database(migrated=True) as url:
        yield url


@dataclass
class ServerHandle:
    running: RunningServer
    token: str = ""
    _channels: list[grpc.aio.Channel] = field(default_factory=list)
    _clients: list[AsyncClient] = field(default_factory=list)

    @property
    def address(self) -> str:
        return self.running.address

    @property
    def home(self) -> Path:
        return self.running.ctx.config.home

    @property
    def ctx(self) -> Any:
        return self.running.ctx

    def channel(self, credentials: grpc.ChannelCredentials | None = None) -> grpc.aio.Channel:
        if credentials is None:
            channel = grpc.aio.insecure_channel(self.address)
        else:
            channel = grpc.aio.secure_channel(self.address, credentials)
        self._channels.append(channel)
        return channel

    async def client(self) -> AsyncClient:
        """The Python client (typed methods, RpcFailure exceptions) on this server, with its token."""
        client = await AsyncClient.connect(self.address, token=self.token or None)
        self._clients.append(client)
        return client

    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),) if self.token else ()

    async def close(self) -> None:
        for client in self._clients:
            await client.close()
        for channel in self._channels:
            await channel.close()
        await self.running.stop(grace=0.5)


ServerFactory = Callable[..., Awaitable[ServerHandle]]


@pytest.fixture
async def server_factory(tmp_path: Path) -> AsyncIterator[ServerFactory]:
    """Starts servers with Config overrides; each gets its own home unless given one."""
    handles: list[ServerHandle] = []

    async def start(**overrides: Any) -> ServerHandle:
        home = overrides.pop("home", None) or tmp_path / f"home{len(handles)}"
        config = replace(Config(listen="127.0.0.1:0", home=home, grace_seconds=0.5), **overrides)
        if not config.database_url:
            default = default_database_url(home).removeprefix("sqlite+aiosqlite:///")
            await migrated_sqlite(Path(default), unless_present=True)
        handle = ServerHandle(await start_server(config), token=config.token)
        handles.append(handle)
        return handle

    yield start
    for handle in reversed(handles):
        await handle.close()


@pytest.fixture
async def server(server_factory: ServerFactory) -> ServerHandle:
    """A server on SQLite under a temporary runtime home."""
    return await server_factory()


@pytest.fixture
async def seeded_server(server_factory: ServerFactory) -> ServerHandle:
    """A server on SQLite whose home holds Pioneer's SOUL.md and IDENTITY.md, as `serve`'s first run
    at its default home leaves them (a server seeds nothing unless told to)."""
    return await server_factory(seed_bootstrap_files=True)


@pytest.fixture
async def pg_server(database_url: str, server_factory: ServerFactory) -> ServerHandle:
    # database_url is set up first so it is torn down last, after the server stopped.
    """A server on each database backend (SQLite and PostgreSQL)."""
    return await server_factory(database_url=database_url)
