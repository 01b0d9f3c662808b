"""Replicas on one PostgreSQL: an observer on one sees compiles served by another.

One replica is a real `pioneer-grpc serve` subprocess; the other runs in the test
process with its own engine and its own LISTEN connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import asyncpg
import grpc

from pioneer_grpc.events import wiring
from pioneer_grpc.events.hub import ManifestHub
from pioneer_grpc.events.pg_listener import APPLICATION_NAME
from pioneer_grpc.service.observe import record_manifest
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from tests.events.helpers import Observer, compile_turn, numbered_manifest

SCRIPT = Path(sys.executable).parent / "pioneer-grpc"


class ServeProcess:
    """`pioneer-grpc serve` on an ephemeral port; the address is read from its first line."""

    def __init__(self, database_url: str, home: Path) -> None:
        self.args = [
            str(SCRIPT),
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--home",
            str(home),
            "--database-url",
            database_url,
            "--grace-seconds",
            "0.5",
            "--log-level",
            "WARNING",
        ]
        self.stderr_path = home.parent / f"{home.name}.stderr"
        self.proc: asyncio.subprocess.Process | None = None
        self.address = ""

    async def start(self) -> ServeProcess:
        with self.stderr_path.open("wb") as stderr:
            self.proc = await asyncio.create_subprocess_exec(
                *self.args, stdout=asyncio.subprocess.PIPE, stderr=stderr
            )
        assert self.proc.stdout is not None
        line = (await asyncio.wait_for(self.proc.stdout.readline(), 60)).decode()
        assert "serving on " in line, self.stderr_path.read_text()
        self.address = line.rsplit("serving on ", 1)[1].strip()
        return self

    async def stop(self) -> int:
        assert self.proc is not None
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 30)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        return self.proc.returncode or 0


def plain(url: str) -> str:
    return url.replace("postgresql+asyncpg", "postgresql")


async def test_observers_see_compiles_served_by_the_other_replica(
    postgres_url, server_factory, tmp_path
) -> None:
    local = await server_factory(database_url=postgres_url)
    remote = await ServeProcess(postgres_url, tmp_path / "remote-home").start()
    channel = grpc.aio.insecure_channel(remote.address)
    try:
        on_remote = Observer(channel, service_pb2.WatchManifestsRequest()).start()
        on_local = Observer(local.channel(), service_pb2.WatchManifestsRequest()).start()
        await on_remote.wait_live(within=30)
        await on_local.wait_live()
        served = []
        for n in range(3):
            for replica, name in ((local.channel(), "local"), (channel, "remote")):
                response = await compile_turn(replica, "t", f"{name}-{n}", f"round {n}")
                served.append(response.manifest_event_id)
        assert served == sorted(served)
        assert await on_remote.wait_for_count(6) == served
        assert await on_local.wait_for_count(6) == served
        await on_remote.cancel()
        await on_local.cancel()
    finally:
        await channel.close()
        assert await remote.stop() == 0
    assert "Traceback" not in remote.stderr_path.read_text()


async def listener_pids(admin: asyncpg.Connection) -> set[int]:
    """Listeners on the admin connection's database (the cluster may serve other tests meanwhile)."""
    rows = await admin.fetch(
        "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()",
        APPLICATION_NAME,
    )
    return {row["pid"] for row in rows}


async def listeners_once(
    admin: asyncpg.Connection, done: Callable[[set[int]], bool], within: float = 30
) -> set[int]:
    """The listener pids as soon as `done` holds for them (polled: pg_stat_activity has no event).

    The two replicas reconnect independently, and a terminated backend leaves
    pg_stat_activity only when its process has exited.
    """
    async with asyncio.timeout(within):
        for _ in itertools.count():
            pids = await listener_pids(admin)
            if done(pids):
                return pids
            await asyncio.sleep(0.05)
    raise AssertionError("unreachable")


@contextlib.asynccontextmanager
async def connections_refused(url: str) -> AsyncIterator[None]:
    """No new connection to the database of `url` (open ones go on): a lost listener cannot come back."""
    base, database = plain(url).rsplit("/", 1)
    # A database cannot refuse connections from a session of its own.
    maintenance = await asyncpg.connect(f"{base}/postgres")
    try:
        await maintenance.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS false')
        try:
            yield
        finally:
            await maintenance.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')
    finally:
        await maintenance.close()


async def test_a_lost_listen_connection_reconnects_and_catches_up(
    postgres_url, server_factory, monkeypatch
) -> None:
    # Without the hub's safety poll only the listener can deliver what another replica commits,
    # so nothing here has to beat the poll's clock.
    monkeypatch.setattr(wiring, "ManifestHub", functools.partial(ManifestHub, poll_seconds=3600))
    writer = await server_factory(database_url=postgres_url)
    reader = await server_factory(database_url=postgres_url)
    observer = Observer(reader.channel(), service_pb2.WatchManifestsRequest()).start()
    await observer.wait_live()
    first = await record_manifest(writer.ctx, "t", "turn-1", numbered_manifest(1))
    assert await observer.wait_for_count(1) == [first]

    admin = await asyncpg.connect(plain(postgres_url))
    try:
        before = await listener_pids(admin)
        assert len(before) == 2
        async with connections_refused(postgres_url):
            await admin.execute("SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) pid", list(before))
            await listeners_once(admin, lambda pids: not pids)
            # Committed while no replica listens (the writer's pool keeps its open connection):
            # only the catch-up read after reconnecting can deliver it.
            missed = await record_manifest(writer.ctx, "t", "turn-2", numbered_manifest(2))
        assert await observer.wait_for_count(2, within=30) == [first, missed]
        after = await listeners_once(admin, lambda pids: len(pids) == 2 and not pids & before)
    finally:
        await admin.close()
    assert len(after) == 2
    assert not after & before
    # Both replicas listen again: the notification alone delivers the next one.
    later = await record_manifest(writer.ctx, "t", "turn-3", numbered_manifest(3))
    assert await observer.wait_for_count(3, within=30) == [first, missed, later]
    await observer.cancel()
