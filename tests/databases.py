"""Databases for tests: the PostgreSQL cluster `make test` starts (PIONEER_TEST_PG_URL), a fresh
database per test, and copies of a database already migrated to head.

Migrating an empty database runs every migration: 0.4-0.9 s on the 2-core machine,
for each of the suite's thousands of server starts and test databases. A test that
does not test the migrations gets a copy of one database migrated once per test
process instead (`migrated=True`, `migrated_sqlite`): the schema every start reaches,
in a millisecond for SQLite and a CREATE DATABASE for PostgreSQL. The server still
runs `migrate` at start; at head it has nothing to do. The migration tests, and any
test that asks for an empty database, still migrate from nothing.

Under CI=true a missing PostgreSQL fails, as does any other skip (tests/ci_guard.py).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

PG_URL_ENV = "PIONEER_TEST_PG_URL"


def require_postgres() -> str:
    url = os.environ.get(PG_URL_ENV)
    if url:
        return url
    if os.environ.get("CI") == "true":
        pytest.fail(f"{PG_URL_ENV} is not set: under CI the PostgreSQL tests must run (use `make test`)")
    pytest.skip(f"{PG_URL_ENV} not set; `make test` starts PostgreSQL")


def _plain(url: str) -> str:
    return url.replace("postgresql+asyncpg", "postgresql")


class _Templates:
    """This test process's migrated databases, made at first use (each xdist worker has its own)."""

    sqlite: Path | None = None
    postgres: str | None = None  # a database name on the test cluster


async def _migrated(url: str) -> None:
    from pioneer_grpc.store.engine import create_engine
    from pioneer_grpc.store.migrate import migrate

    engine = create_engine(url)
    try:
        await migrate(engine)
    finally:
        await engine.dispose()


async def migrated_sqlite(path: Path, *, unless_present: bool = False) -> None:
    """Puts at `path` a SQLite database migrated to head (a copy of this process's template);
    `unless_present` leaves a database already there as it is."""
    if _Templates.sqlite is None:
        folder = Path(tempfile.mkdtemp(prefix="pioneer-template-"))
        template = folder / "template.db"
        await _migrated(f"sqlite+aiosqlite:///{template}")
        _Templates.sqlite = template
    _copied(_Templates.sqlite, path, unless_present)


def _copied(template: Path, path: Path, unless_present: bool) -> None:
    if unless_present and path.exists():
        return
    # The last connection's close checkpointed the WAL into the file: the file is the database.
    assert not template.with_name(template.name + "-wal").exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, path)


async def _postgres_template(admin_url: str) -> str:
    if _Templates.postgres is None:
        name = "template_" + uuid.uuid4().hex[:16]
        await _admin(admin_url, f'CREATE DATABASE "{name}"')
        await _migrated(f"{admin_url.rsplit('/', 1)[0]}/{name}")
        _Templates.postgres = name
    return _Templates.postgres


async def _admin(admin_url: str, statement: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(_plain(admin_url))
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


class _Ahead:
    """The next migrated database, copied from the template on a thread of its own while a test runs.

    A CREATE DATABASE takes 0.1-1 s of the cluster's time on the 2-core machine; made
    ahead, a test waits for it only when the one before it was shorter. Each test still
    has a database nobody used before, and drops it after.
    """

    thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pioneer-test-databases")
    next: tuple[str, str, Future[None]] | None = None  # (admin URL, name, its CREATE DATABASE)

    @classmethod
    def submit(cls, admin_url: str, statement: str) -> Future[None]:
        return cls.thread.submit(asyncio.run, _admin(admin_url, statement))

    @classmethod
    async def take(cls, admin_url: str, template: str) -> str:
        """A new copy of `template`, and the next one on its way."""
        ahead = cls.next
        upcoming = "t_" + uuid.uuid4().hex[:16]
        creating = cls.submit(admin_url, f'CREATE DATABASE "{upcoming}" TEMPLATE "{template}"')
        cls.next = (admin_url, upcoming, creating)
        if ahead is not None:
            made_for, made, creating = ahead
            try:
                await asyncio.wrap_future(creating)
            except Exception:  # the cluster was away, say: the test makes its own below
                pass
            else:
                if made_for == admin_url:
                    return made
                cls.submit(made_for, f'DROP DATABASE IF EXISTS "{made}" WITH (FORCE)')
        name = "t_" + uuid.uuid4().hex[:16]
        await _admin(admin_url, f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return name

    @classmethod
    def drop_all(cls) -> None:
        ahead, cls.next = cls.next, None
        if ahead is not None:
            made_for, made, creating = ahead
            try:
                creating.result()
            except Exception:
                return
            cls.submit(made_for, f'DROP DATABASE IF EXISTS "{made}" WITH (FORCE)').result()


def drop_templates() -> None:
    """At the end of a test process: the templates go (a developer's cluster outlives the run)."""
    if _Templates.sqlite is not None:
        shutil.rmtree(_Templates.sqlite.parent, ignore_errors=True)
        _Templates.sqlite = None
    _Ahead.drop_all()
    name, _Templates.postgres = _Templates.postgres, None
    url = os.environ.get(PG_URL_ENV)
    if name is not None and url:
        asyncio.run(_admin(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


class fresh_postgres_database:
    """Creates a database on the test cluster and drops it afterwards: empty, or with `migrated`
    a copy of this process's database migrated to head."""

    def __init__(self, migrated: bool = False) -> None:
        self.admin_url = require_postgres()
        self.name = ""
        self.migrated = migrated

    async def __aenter__(self) -> str:
        if self.migrated:
            self.name = await _Ahead.take(self.admin_url, await _postgres_template(self.admin_url))
        else:
            self.name = "t_" + uuid.uuid4().hex[:16]
            await _admin(self.admin_url, f'CREATE DATABASE "{self.name}"')
        base = self.admin_url.rsplit("/", 1)[0]
        return f"{base}/{self.name}"

    async def __aexit__(self, *exc: object) -> None:
        await _admin(self.admin_url, f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
