"""Fixtures of the chaos tests: a PostgreSQL cluster of the test's own, a tiny tmpfs, helpers.

Both need the machine's cooperation (PostgreSQL binaries; root to mount). Where
it is missing the test is skipped, except under CI=true, where it fails.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.support import eventually, free_port, unavailable_here

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class PgCluster:
    """A throwaway cluster (scripts/pg.sh) that a test may stop and start again on the same port."""

    directory: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/postgres"

    def _pg_ctl(self, *args: str) -> None:
        [bin_dir] = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1:]
        command = [f"{bin_dir}/pg_ctl", "-D", str(self.directory / "data"), "-w", *args]
        if os.getuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=60)

    def stop(self) -> None:
        self._pg_ctl("-m", "fast", "stop")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._pg_ctl("-l", str(self.directory / "log"), "-o", options, "start")


@pytest.fixture
def pg_cluster() -> Iterator[PgCluster]:
    if not glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"):
        unavailable_here("PostgreSQL binaries are not installed (apt-get install postgresql)")
    directory = Path(f"/tmp/pioneer-chaos-pg-{os.getpid()}-{free_port()}")
    port = free_port()
    subprocess.run(
        ["bash", str(ROOT / "scripts/pg.sh"), "start", str(directory), str(port)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    cluster = PgCluster(directory, port)
    try:
        yield cluster
    finally:
        subprocess.run(["bash", str(ROOT / "scripts/pg.sh"), "stop", str(directory)], timeout=120)


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 6 MB tmpfs, mounted for this test only."""
    if os.getuid() != 0 or shutil.which("mount") is None:
        unavailable_here("mounting a tmpfs needs root")
    mountpoint = tmp_path / "small"
    mountpoint.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mountpoint)], capture_output=True, timeout=30
    )
    if done.returncode != 0:
        unavailable_here(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], timeout=30)


def fill(directory: Path) -> Path:
    """Writes a file until the filesystem is full; returns it (delete it to free the space)."""
    filler = directory / "filler"
    block = b"\0" * 65536
    with filler.open("wb", buffering=0) as handle:
        try:
            while True:
                handle.write(block)
        except OSError:
            pass
        try:
            while True:
                handle.write(b"\0" * 512)
        except OSError:
            pass
    return filler


async def health_status(channel: grpc.aio.Channel) -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    return int((await stub.Check(health_pb2.HealthCheckRequest(), timeout=5)).status)


async def wait_health(channel: grpc.aio.Channel, wanted: int, seconds: float = 30) -> None:
    async def reached() -> bool:
        return await health_status(channel) == wanted

    await eventually(reached, seconds, step=0.05, what=f"health status {wanted}")


@pytest.fixture
async def channels() -> AsyncIterator[list[grpc.aio.Channel]]:
    opened: list[grpc.aio.Channel] = []
    yield opened
    for channel in opened:
        await channel.close()


@pytest.fixture
async def pg_server_with_token(database_url, server_factory):
    """A server requiring a token, on each backend."""
    return await server_factory(database_url=database_url, token="tok-9c1e-never-logged")
