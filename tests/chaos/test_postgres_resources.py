"""PostgreSQL out of resources, through asyncpg and the real RPC.

- A real full disk: the cluster's tables live in a tablespace on a small tmpfs,
  which a file then fills. Appends fail RESOURCE_EXHAUSTED/DISK_FULL (SQLSTATE
  53100, from the failed file extension), reads go on, nothing acknowledged is
  lost, and appends work again once the file is deleted. Where no tmpfs can be
  mounted (not root, no permission) the same scenario runs with the full disk
  stood in for by a trigger raising SQLSTATE 53100, so the test never skips;
  that variant also runs on its own (`raised`).
- Raised SQLSTATEs: a trigger raises disk_full, out_of_memory and
  too_many_connections on insert, with a marker taken from the entry's content
  in its message; each reaches the client as its named code and reason, and
  neither the answer nor any log line carries the marker.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import shutil
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from pioneer_grpc.v1 import history_pb2, history_service_pb2, history_service_pb2_grpc
from tests.builders import own_turn
from tests.chaos.conftest import PgCluster, fill
from tests.chaos.test_database_outages import _all_stored
from tests.conftest import fresh_postgres_database
from tests.support import decoded

USER = history_pb2.ENTRY_ROLE_USER
DISK_FULL = "RESOURCE_EXHAUSTED/DISK_FULL"
# Random text: TOAST compression cannot shrink it, so each entry takes its size on disk.
ENTRY_CHARS = 100_000

_REFUSE = """
CREATE FUNCTION pioneer_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM pioneer_test_refusal) THEN
    RAISE EXCEPTION 'refused entry %', NEW.content
      USING ERRCODE = (SELECT sqlstate FROM pioneer_test_refusal LIMIT 1);
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER pioneer_test_refuse BEFORE INSERT ON conversation_entries
  FOR EACH ROW EXECUTE FUNCTION pioneer_test_refuse();
"""


async def _sql(url: str, *statements: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


@dataclass
class SmallSpace:
    """An 8 MB tmpfs the cluster's user may write, or why there is none."""

    mountpoint: Path
    why_not: str = ""


@pytest.fixture(params=["tmpfs", "raised"])
def small_space(request: pytest.FixtureRequest, pg_cluster: PgCluster) -> Iterator[SmallSpace]:
    mountpoint = Path(f"/tmp/pioneer-pg-space-{pg_cluster.port}")
    if request.param == "raised":
        yield SmallSpace(mountpoint, "the raised SQLSTATE was asked for")
        return
    if os.getuid() != 0 or shutil.which("mount") is None:
        yield SmallSpace(mountpoint, "mounting a tmpfs needs root")
        return
    mountpoint.mkdir(mode=0o755)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m,mode=0755", "tmpfs", str(mountpoint)],
        capture_output=True,
        timeout=30,
    )
    try:
        if done.returncode != 0:
            yield SmallSpace(mountpoint, f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
            return
        (mountpoint / "space").mkdir()
        shutil.chown(mountpoint / "space", "postgres", "postgres")
        yield SmallSpace(mountpoint)
    finally:
        if done.returncode == 0:
            subprocess.run(["umount", "-l", str(mountpoint)], timeout=30)
        mountpoint.rmdir()


async def _full_disk(
    cluster: PgCluster, space: SmallSpace
) -> tuple[str, Callable[[], Awaitable[Callable[[], None]]]]:
    """(kind, fill): `await fill()` fills the disk the tables live on and returns what frees it."""
    if not space.why_not:
        await _sql(
            cluster.url,
            f"CREATE TABLESPACE small LOCATION '{space.mountpoint / 'space'}'",
            "ALTER DATABASE postgres SET default_tablespace = 'small'",
        )

        async def fill_disk() -> Callable[[], None]:
            return (await asyncio.to_thread(fill, space.mountpoint)).unlink

        return "a tablespace on an 8 MB tmpfs, filled by a file", fill_disk

    async def refuse() -> Callable[[], None]:
        await _sql(cluster.url, "INSERT INTO pioneer_test_refusal VALUES ('53100')")
        return lambda: asyncio.run(_sql(cluster.url, "DELETE FROM pioneer_test_refusal"))

    return f"a trigger raising disk_full ({space.why_not})", refuse


async def test_postgres_disk_full_then_space_returns(pg_cluster, small_space, server_factory):
    kind, fill_disk = await _full_disk(pg_cluster, small_space)
    server = await server_factory(database_url=pg_cluster.url, health_probe_seconds=0.2)
    await _sql(pg_cluster.url, "CREATE TABLE pioneer_test_refusal (sqlstate text)", _REFUSE)
    history = history_service_pb2_grpc.HistoryServiceStub(server.channel())
    await history.CreateThread(history_service_pb2.CreateThreadRequest(thread_id="t"))
    contents: dict[str, str] = {}

    async def append(entry_id: str) -> None:
        content = secrets.token_urlsafe(ENTRY_CHARS * 3 // 4)
        await history.AppendEntries(
            history_service_pb2.AppendEntriesRequest(thread_id="t", entries=[own_turn(entry_id, content)]),
            timeout=30,
        )
        contents[entry_id] = content

    for i in range(5):
        await append(f"before-{i}")
    free_space = await fill_disk()
    codes: dict[str, int] = {}
    for i in range(40):
        try:
            await append(f"full-{i}")
        except grpc.aio.AioRpcError as error:
            code = f"{error.code().name}/{decoded(error).reason}"
            codes[code] = codes.get(code, 0) + 1
    print(f"{kind}: {len(contents)} acknowledged in all, failures {codes}")
    assert set(codes) == {DISK_FULL}, codes
    assert codes[DISK_FULL] >= 30, "the disk did not stay full"
    # Reads are still served.
    thread = (await history.GetThread(history_service_pb2.GetThreadRequest(thread_id="t"))).thread
    assert thread.entry_count == len(contents)
    await history.LoadConversationHistory(history_service_pb2.LoadConversationHistoryRequest(thread_id="t"))
    listed = await history.ListEntries(history_service_pb2.ListEntriesRequest(thread_id="t", page_size=100))
    assert {entry.entry_id: entry.content for entry in listed.entries} == contents

    await asyncio.to_thread(free_space)
    await append("after")
    await _all_stored(await server.client(), "t", list(contents), contents)


# SQLSTATE -> the code and reason a client gets.
RAISED = {
    "53100": "RESOURCE_EXHAUSTED/DISK_FULL",
    "53200": "RESOURCE_EXHAUSTED/DATABASE_OUT_OF_MEMORY",
    "53300": "UNAVAILABLE/DATABASE_BUSY",
}


@pytest.fixture
async def refusing_url() -> AsyncIterator[str]:
    async with fresh_postgres_database() as url:
        yield url


async def test_postgres_resource_sqlstates_are_named_without_content(refusing_url, server_factory, caplog):
    caplog.set_level(logging.DEBUG)
    server = await server_factory(database_url=refusing_url)
    await _sql(refusing_url, "CREATE TABLE pioneer_test_refusal (sqlstate text)", _REFUSE)
    history = history_service_pb2_grpc.HistoryServiceStub(server.channel())
    await history.CreateThread(history_service_pb2.CreateThreadRequest(thread_id="t"))
    seen: dict[str, str] = {}
    for sqlstate in RAISED:
        marker = f"planted-{secrets.token_hex(8)}"
        await _sql(
            refusing_url,
            "DELETE FROM pioneer_test_refusal",
            f"INSERT INTO pioneer_test_refusal VALUES ('{sqlstate}')",
        )
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await history.AppendEntries(
                history_service_pb2.AppendEntriesRequest(thread_id="t", entries=[own_turn(sqlstate, marker)]),
                timeout=30,
            )
        error = caught.value
        seen[sqlstate] = f"{error.code().name}/{decoded(error).reason}"
        details = error.details() or ""
        assert sqlstate in details
        assert marker not in details
        assert "refused entry" not in details
        assert all(marker not in record.getMessage() for record in caplog.records)
    assert seen == RAISED
    # Nothing was stored, and the thread takes the entries once the database stops refusing.
    await _sql(refusing_url, "DELETE FROM pioneer_test_refusal")
    response = await history.AppendEntries(
        history_service_pb2.AppendEntriesRequest(thread_id="t", entries=[own_turn(s, "ok") for s in RAISED]),
        timeout=30,
    )
    assert response.created_count == len(RAISED)
