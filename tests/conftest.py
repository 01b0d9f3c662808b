"""Shared fixtures: a real server on an ephemeral loopback port, and databases.

`database_url` is parametrised over SQLite and PostgreSQL. PostgreSQL comes from
PIONEER_TEST_PG_URL (set by `make test`, which starts a throwaway cluster); each
test gets a database of its own. Under CI=true a missing PostgreSQL fails, as does
any other skip (tests/ci_guard.py).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import grpc
import pytest

from pioneer_grpc.client import AsyncClient
from pioneer_grpc.config import Config
from pioneer_grpc.server.app import RunningServer, start_server
from tests.ci_guard import pytest_runtest_makereport  # noqa: F401  (the hook: a skip under CI=true fails)

PG_URL_ENV = "PIONEER_TEST_PG_URL"


def require_postgres() -> str:
    url = os.environ.get(PG_URL_ENV)
    if url:
        return url
    if os.environ.get("CI") == "true":
        pytest.fail(f"{PG_URL_ENV} is not set: under CI the PostgreSQL tests must run (use `make test`)")
    pytest.skip(f"{PG_URL_ENV} not set; `make test` starts PostgreSQL")


@pytest.fixture(params=["sqlite", "postgres"])
async def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"
        return
    async with fresh_postgres_database() as url:
        yield url


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    """A fresh database on the test cluster, for tests that only make sense on PostgreSQL (replicas)."""
    async with fresh_postgres_database() as url:
        yield url


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
