"""The database goes away under load and comes back: clients see UNAVAILABLE (retryable) or, for a
full disk, RESOURCE_EXHAUSTED; health follows; the server recovers by itself; nothing acknowledged is lost."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from pathlib import Path

from grpc_health.v1 import health_pb2

from pioneer_grpc.client import AsyncClient, RpcFailure
from pioneer_grpc.store.engine import JOURNAL_SIZE_LIMIT_BYTES
from pioneer_grpc.store.probe import MIN_FREE_BYTES, RESERVE_BYTES
from pioneer_grpc.v1 import history_pb2, prompt_pb2, turn_service_pb2
from tests.builders import own_turn
from tests.chaos.conftest import fill, health_status, wait_health
from tests.support import eventually

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
USER = history_pb2.ENTRY_ROLE_USER
FREED_BYTES = 2 * 1024 * 1024


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _round(entry_id: str, content: str) -> turn_service_pb2.PrepareTurnRequest:
    """A PrepareTurn appending one entry, in the turn `_entry` gives it."""
    entry = own_turn(entry_id, content)
    return turn_service_pb2.PrepareTurnRequest(
        thread_id="t",
        turn_id=entry.turn_id,
        model="claude-sonnet-4-5",
        new_entries=[entry],
        compile_input=prompt_pb2.PromptCompileInput(profile=prompt_pb2.PROMPT_PROFILE_MINIMAL),
    )


class Writers:
    """Appends one entry per call in a loop; remembers what was acknowledged and which codes failed."""

    def __init__(self, client: AsyncClient, thread_id: str, count: int) -> None:
        self.client = client
        self.thread_id = thread_id
        self.count = count
        self.acknowledged: list[str] = []
        self.failures: dict[str, int] = {}
        self.stop = asyncio.Event()

    async def _one(self, w: int) -> None:
        n = 0
        while not self.stop.is_set():
            entry_id = f"w{w}-{n}"
            n += 1
            try:
                await self.client.append_entries(
                    thread_id=self.thread_id, entries=[own_turn(entry_id)], timeout=40
                )
                self.acknowledged.append(entry_id)
            except RpcFailure as error:
                key = f"{error.code.name}/{error.reason}"
                self.failures[key] = self.failures.get(key, 0) + 1
                await asyncio.sleep(0.05)

    @contextlib.asynccontextmanager
    async def running(self):
        tasks = [asyncio.create_task(self._one(w)) for w in range(self.count)]
        try:
            yield self
        finally:
            self.stop.set()
            await asyncio.gather(*tasks)


async def _all_stored(
    client: AsyncClient, thread_id: str, entry_ids: list[str], contents: dict[str, str] | None = None
) -> None:
    """Appending the acknowledged entries again creates none of them: each is stored already."""
    contents = contents or {}
    for start in range(0, len(entry_ids), 100):
        batch = [own_turn(e, contents.get(e, "")) for e in entry_ids[start : start + 100]]
        response = await client.append_entries(thread_id=thread_id, entries=batch, timeout=30)
        assert response.created_count == 0
        assert response.existing_count == len(batch)


async def test_postgres_stopped_and_restarted_mid_load(pg_cluster, server_factory):
    server = await server_factory(database_url=pg_cluster.url, health_probe_seconds=0.2)
    channel = server.channel()  # the wire itself: the standard health service
    client = await server.client()
    await client.create_thread(thread_id="t")
    writers = Writers(client, "t", 8)
    async with writers.running():
        await eventually(lambda: len(writers.acknowledged) >= 20, within=60)
        before = len(writers.acknowledged)
        await asyncio.to_thread(pg_cluster.stop)
        await wait_health(channel, NOT_SERVING)
        await eventually(lambda: bool(writers.failures), within=60)
        await asyncio.to_thread(pg_cluster.start)
        await wait_health(channel, SERVING)
        resumed = len(writers.acknowledged)
        await eventually(lambda: len(writers.acknowledged) >= resumed + 20, within=60)
    print(f"acknowledged {len(writers.acknowledged)} (before stop {before}), failures {writers.failures}")
    assert before > 0
    assert len(writers.acknowledged) > resumed, "writes did not resume after PostgreSQL came back"
    assert writers.failures, "stopping PostgreSQL failed no write"
    assert set(writers.failures) <= {
        "UNAVAILABLE/DATABASE_UNAVAILABLE",
        "UNAVAILABLE/DATABASE_BUSY",
    }, writers.failures
    await _all_stored(client, "t", writers.acknowledged)


async def _terminate_backends(url: str) -> int:
    import asyncpg

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        killed = await conn.fetch(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND datname = current_database()"
        )
    finally:
        await conn.close()
    return len(killed)


async def test_postgres_backends_killed_mid_load(pg_cluster, server_factory):
    server = await server_factory(database_url=pg_cluster.url, health_probe_seconds=0.2)
    channel = server.channel()  # the wire itself: the standard health service
    client = await server.client()
    await client.create_thread(thread_id="t")
    writers = Writers(client, "t", 8)
    killed = 0
    async with writers.running():
        for _ in range(5):
            # Each kill lands on backends that were just writing.
            target = len(writers.acknowledged) + 5
            await eventually(lambda target=target: len(writers.acknowledged) >= target, within=60)
            killed += await _terminate_backends(pg_cluster.url)
        before = len(writers.acknowledged)
        await eventually(lambda: len(writers.acknowledged) >= before + 20, within=60)
    print(f"killed {killed} backends; acknowledged {len(writers.acknowledged)}, failures {writers.failures}")
    assert killed > 0
    assert len(writers.acknowledged) > before, "writes did not go on after the backends were killed"
    assert set(writers.failures) <= {"UNAVAILABLE/DATABASE_UNAVAILABLE"}, writers.failures
    await wait_health(channel, SERVING)
    await _all_stored(client, "t", writers.acknowledged)


async def _writes_back(client: AsyncClient, acknowledged: list[str], within: float) -> None:
    """Appends (each call with its own deadline) until one is acknowledged, for at most `within` s."""

    async def one() -> bool:
        entry_id = f"back-{len(acknowledged)}"
        try:
            await client.append_entries(thread_id="t", entries=[own_turn(entry_id)], timeout=within)
        except RpcFailure as error:
            assert error.reason == "DISK_FULL", error
            return False
        acknowledged.append(entry_id)
        return True

    await eventually(one, within, step=0.05, what="an append acknowledged after space was freed")


async def test_disk_full_then_space_returns(small_tmpfs, server_factory):
    """A 6 MB disk filled by the store's own pages, as a growing store fills it, then 2 MB freed: writes
    are back within 5 s, health SERVING, without a restart, and nothing acknowledged is lost."""
    server = await server_factory(home=small_tmpfs / "home", health_probe_seconds=0.2)
    channel = server.channel()  # the wire itself: the standard health service
    client = await server.client()
    await client.create_thread(thread_id="t")
    home = small_tmpfs / "home"
    wal, reserve = home / "pioneer.db-wal", home / "pioneer.db-reserve"
    # A probe makes the checkpoint's reserve beside the database.
    await eventually(lambda: _size(reserve) == RESERVE_BYTES, what="the reserve file")
    # What the operator will free, held by another file meanwhile.
    ballast = small_tmpfs / "ballast"
    await asyncio.to_thread(ballast.write_bytes, b"\0" * (FREED_BYTES + 64 * 1024))
    acknowledged = []
    big = "y" * 60_000
    contents: dict[str, str] = {"after": big}
    # Large appends (new pages) until the store itself fills the disk.
    for n in range(200):
        try:
            await client.append_entries(thread_id="t", entries=[own_turn(f"before-{n}", big)], timeout=30)
        except RpcFailure as error:
            assert error.reason == "DISK_FULL", error
            break
        acknowledged.append(f"before-{n}")
        contents[f"before-{n}"] = big
    else:
        raise AssertionError("200 appends of 60 KB did not fill 6 MB")
    await asyncio.to_thread(fill, small_tmpfs)
    await wait_health(channel, NOT_SERVING)

    codes = set()
    for i in range(40):
        try:
            await client.append_entries(thread_id="t", entries=[own_turn(f"full-{i}", big)], timeout=30)
            acknowledged.append(f"full-{i}")
            contents[f"full-{i}"] = big
        except RpcFailure as error:
            codes.add(f"{error.code.name}/{error.reason}")
    # PrepareTurn writes on its own connection (store/runner.py): refused the same way.
    round_codes = set()
    for i in range(10):
        try:
            await client.prepare_turn(_round(f"round-{i}", big), timeout=30)
            acknowledged.append(f"round-{i}")
            contents[f"round-{i}"] = big
        except RpcFailure as error:
            round_codes.add(f"{error.code.name}/{error.reason}")
    print(f"while full: {len(acknowledged)} acknowledged in all, failures {codes} and {round_codes}")
    assert codes == {"RESOURCE_EXHAUSTED/DISK_FULL"}, codes
    assert round_codes == {"RESOURCE_EXHAUSTED/DISK_FULL"}, round_codes
    # Reads are still served.
    thread = (await client.get_thread(thread_id="t")).thread
    assert thread.entry_count == len(acknowledged)
    await client.load_conversation_history(thread_id="t")

    # 2 MB freed: writes are back within 5 s and stay back, health follows, without a restart.
    await asyncio.to_thread(os.truncate, ballast, ballast.stat().st_size - FREED_BYTES)
    await _writes_back(client, acknowledged, within=5)
    await wait_health(channel, SERVING, seconds=5)
    for i in range(20):
        await client.append_entries(thread_id="t", entries=[own_turn(f"freed-{i}")], timeout=30)
        acknowledged.append(f"freed-{i}")
        await asyncio.sleep(0.2)  # pacing: a client writing now and then, the probe running between
    assert await health_status(channel) == SERVING
    # The WAL was let go: what it held no longer takes the freed space.
    free = (await asyncio.to_thread(shutil.disk_usage, small_tmpfs)).free
    print(f"after 20 appends: WAL {_size(wal):,} bytes, {free:,} bytes free")
    assert _size(wal) < JOURNAL_SIZE_LIMIT_BYTES
    assert free > MIN_FREE_BYTES
    # And the round's connection, given up by the failures, is a working one again.
    await client.prepare_turn(_round("round-after", "after"), timeout=30)
    acknowledged.append("round-after")
    contents["round-after"] = "after"

    await asyncio.to_thread(ballast.unlink)
    await client.append_entries(thread_id="t", entries=[own_turn("after", big)], timeout=30)
    acknowledged.append("after")
    await _all_stored(client, "t", acknowledged, contents)
