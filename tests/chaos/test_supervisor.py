"""`serve --workers 2` under kill -9: a killed worker is named in the log and restarted while the
other keeps serving, nothing acknowledged is lost; a killed supervisor takes every process of the
service with it and frees the port.

The server runs as the real console script; its processes are read from /proc.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from pioneer_grpc.v1 import history_pb2, history_service_pb2, history_service_pb2_grpc
from tests.builders import own_turn
from tests.server.test_workers import connect, connections_per_worker, running
from tests.support import eventually

SCRIPT = Path(sys.executable).parent / "pioneer-grpc"
pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads /proc")
USER = history_pb2.ENTRY_ROLE_USER


@pytest.fixture
async def started() -> AsyncIterator[list[asyncio.subprocess.Process]]:
    """Supervisors a test started: killed if still running when it ends (their workers follow)."""
    processes: list[asyncio.subprocess.Process] = []
    yield processes
    for proc in processes:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def start(
    tmp_path: Path, database_url: str, started: list[asyncio.subprocess.Process]
) -> tuple[asyncio.subprocess.Process, str, Path]:
    """The supervisor, its address once every worker serves, and the file its log goes to."""
    log = tmp_path / "serve.log"
    args = [
        str(SCRIPT),
        "serve",
        "--workers",
        "2",
        "--listen",
        "127.0.0.1:0",
        "--home",
        str(tmp_path / "home"),
    ]
    # INFO: a worker serving again after a restart is logged at INFO (an access line per RPC comes too).
    args += ["--grace-seconds", "0.5", "--log-level", "INFO", "--database-url", database_url]
    with log.open("wb") as stderr:
        proc = await asyncio.create_subprocess_exec(*args, stdout=asyncio.subprocess.PIPE, stderr=stderr)
    started.append(proc)
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), 120)).decode()
    assert "serving on " in line, (line, log.read_text())
    assert "(2 workers)" in line, (line, log.read_text())
    return proc, line.split("serving on ", 1)[1].split()[0], log


def all_children(pid: int) -> list[int]:
    """Every child of `pid`: the workers and multiprocessing's resource tracker."""
    found = []
    with contextlib.suppress(FileNotFoundError):  # the process or one of its threads ended meanwhile
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(FileNotFoundError):
                found += [int(p) for p in (task / "children").read_text().split()]
    return found


def title(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()


def workers_by_number(supervisor: int) -> dict[int, int]:
    """{worker number: pid}, read from the process titles."""
    found = {}
    for pid in all_children(supervisor):
        with contextlib.suppress(OSError):
            match = re.match(r"pioneer-grpc serve: worker (\d+)/2 ", title(pid))
            if match and running(pid):
                found[int(match.group(1))] = pid
    return found


def listening(port: int) -> bool:
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                return True
    return False


class Appenders:
    """`count` clients, each on a connection of its own, appending one entry per call until stopped."""

    def __init__(self, address: str, count: int) -> None:
        self.channels = [connect(address) for _ in range(count)]
        self.acknowledged: list[str] = []
        # When the call of each acknowledged entry began (monotonic), in the same order.
        self.called_at: list[float] = []
        self.failures: dict[str, int] = {}
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    async def _append(self, w: int) -> None:
        history = history_service_pb2_grpc.HistoryServiceStub(self.channels[w])
        n = 0
        while not self._stop.is_set():
            entry_id = f"w{w}-{n}"
            n += 1
            request = history_service_pb2.AppendEntriesRequest(
                thread_id="t",
                entries=[own_turn(entry_id, "x")],
            )
            called_at = time.monotonic()
            try:
                await history.AppendEntries(request, timeout=30)
                self.acknowledged.append(entry_id)
                self.called_at.append(called_at)
            except grpc.aio.AioRpcError as error:
                self.failures[error.code().name] = self.failures.get(error.code().name, 0) + 1
                await asyncio.sleep(0.05)  # a client's pause before it retries

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._append(w)) for w in range(len(self.channels))]

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)
        for channel in self.channels:
            await channel.close()


async def all_stored(address: str, entry_ids: list[str]) -> None:
    """Appending the acknowledged entries again creates none: every one of them is stored."""
    async with grpc.aio.insecure_channel(address) as channel:
        history = history_service_pb2_grpc.HistoryServiceStub(channel)
        for first in range(0, len(entry_ids), 100):
            batch = [own_turn(e, "x") for e in entry_ids[first : first + 100]]
            reply = await history.AppendEntries(
                history_service_pb2.AppendEntriesRequest(thread_id="t", entries=batch), timeout=30
            )
            assert (reply.created_count, reply.existing_count) == (0, len(batch))


async def append_through(address: str, supervisor: int, port: int, pid: int) -> str:
    """Opens connections until one lands on worker `pid`, appends through it; the entry's id."""
    opened: list[grpc.aio.Channel] = []
    try:
        while len(opened) < 64:
            held = connections_per_worker(supervisor, port)[pid]
            channel = connect(address)
            opened.append(channel)
            await channel.channel_ready()
            if connections_per_worker(supervisor, port)[pid] > held:
                entry_id = f"probe-{pid}"
                await history_service_pb2_grpc.HistoryServiceStub(channel).AppendEntries(
                    history_service_pb2.AppendEntriesRequest(
                        thread_id="t",
                        entries=[own_turn(entry_id, "x")],
                    ),
                    timeout=30,
                )
                return entry_id
        pytest.fail(f"64 connections and none went to worker pid {pid}")
    finally:
        for channel in opened:
            await channel.close()


async def test_a_killed_worker_is_named_and_restarted_nothing_acknowledged_lost(
    database_url, tmp_path, started
):
    proc, address, log = await start(tmp_path, database_url, started)
    port = int(address.rsplit(":", 1)[1])
    assert title(proc.pid) == f"pioneer-grpc serve: supervisor (2 workers) {address}"
    before = workers_by_number(proc.pid)
    assert sorted(before) == [1, 2]
    async with grpc.aio.insecure_channel(address) as channel:
        await history_service_pb2_grpc.HistoryServiceStub(channel).CreateThread(
            history_service_pb2.CreateThreadRequest(thread_id="t")
        )
    appenders = Appenders(address, 4)
    try:
        appenders.start()

        async def loaded() -> bool:
            return len(appenders.acknowledged) >= 40

        await eventually(loaded, 60, what=f"40 appends acknowledged ({appenders.failures})")
        # The worker holding the most appenders' connections is killed.
        held = connections_per_worker(proc.pid, port)
        victim_number, victim = max(before.items(), key=lambda item: held[item[1]])
        assert held[victim] > 0
        os.kill(victim, signal.SIGKILL)
        killed_at = time.monotonic()
        acknowledged_at_kill = len(appenders.acknowledged)

        async def serving_again() -> bool:  # an append called after the kill was acknowledged
            return any(t > killed_at for t in appenders.called_at[acknowledged_at_kill:])

        # The other worker serves throughout: the appenders go on at once.
        await eventually(serving_again, 2, what="appends acknowledged again after the kill")
        back_after = time.monotonic() - killed_at

        async def restarted() -> bool:
            now = workers_by_number(proc.pid)
            return now.get(victim_number) not in (None, victim) and " serving" in log.read_text()

        await eventually(restarted, 60, what=f"worker {victim_number} restarted")
        restarted_after = time.monotonic() - killed_at
        new_pid = workers_by_number(proc.pid)[victim_number]
    finally:
        await appenders.stop()
    probe = await append_through(address, proc.pid, port, new_pid)
    appenders.acknowledged.append(probe)
    text = log.read_text()
    print(f"serving again {back_after:.2f} s after the kill, worker restarted after {restarted_after:.2f} s")
    print(f"acknowledged {len(appenders.acknowledged)}, failures {appenders.failures}; log:\n{text}")
    assert ("queues for SQLite's single writer" in text) == database_url.startswith("sqlite"), text
    assert f"worker {victim_number}/2 (pid {victim}) killed by SIGKILL" in text
    assert f"worker {victim_number}/2 (pid {new_pid}) serving" in text
    other = 3 - victim_number
    assert workers_by_number(proc.pid)[other] == before[other], "the other worker was restarted too"
    assert set(appenders.failures) <= {"UNAVAILABLE"}, appenders.failures
    await all_stored(address, appenders.acknowledged)
    proc.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(proc.wait(), 60) == 0


async def test_a_killed_supervisor_takes_every_process_with_it_and_frees_the_port(
    database_url, tmp_path, started
):
    proc, address, _log = await start(tmp_path, database_url, started)
    port = int(address.rsplit(":", 1)[1])
    processes = all_children(proc.pid)
    assert len(workers_by_number(proc.pid)) == 2
    assert any("resource_tracker" in title(p) for p in processes)
    assert listening(port)
    async with grpc.aio.insecure_channel(address) as channel:
        await history_service_pb2_grpc.HistoryServiceStub(channel).CreateThread(
            history_service_pb2.CreateThreadRequest(thread_id="t")
        )
    appenders = Appenders(address, 4)
    appenders.start()
    try:

        async def loaded() -> bool:
            return len(appenders.acknowledged) >= 40

        await eventually(loaded, 60, what="40 appends acknowledged")
        proc.kill()  # under load
        killed_at = time.monotonic()

        async def all_gone() -> bool:  # a zombie (the supervisor, until reaped below) is not running
            return not [pid for pid in [proc.pid, *processes] if running(pid)] and not listening(port)

        await eventually(all_gone, 2, what=f"every process of the service ended and port {port} free")
        gone_after = time.monotonic() - killed_at
        await proc.wait()
    finally:
        await appenders.stop()
    print(f"all {len(processes)} processes gone and the port free {gone_after:.2f} s after the kill")
    print(f"acknowledged {len(appenders.acknowledged)}, failures {appenders.failures}")
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        async with grpc.aio.insecure_channel(address) as channel:
            await history_service_pb2_grpc.HistoryServiceStub(channel).GetThread(
                history_service_pb2.GetThreadRequest(thread_id="t"), timeout=5
            )
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    # A new supervisor on the same store finds every acknowledged entry.
    again, address, _log = await start(tmp_path, database_url, started)
    try:
        await all_stored(address, appenders.acknowledged)
    finally:
        again.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(again.wait(), 60) == 0


async def test_sigterm_during_the_start_stops_at_once(tmp_path, started):
    """The workers exist but are still importing: SIGTERM ends the start instead of waiting for them."""
    args = [
        str(SCRIPT),
        "serve",
        "--workers",
        "2",
        "--listen",
        "127.0.0.1:0",
        "--home",
        str(tmp_path / "home"),
    ]
    proc = await asyncio.create_subprocess_exec(
        *args, "--log-level", "WARNING", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    started.append(proc)

    async def both_spawned() -> bool:
        return proc.returncode is None and len(workers_by_number(proc.pid)) == 2

    await eventually(both_spawned, 60, what="two worker processes")
    processes = all_children(proc.pid)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, stderr.decode()
    assert b"serving on" not in stdout, "the start waited for every worker before stopping"

    async def all_gone() -> bool:  # the resource tracker ends on its own, just after
        return not [pid for pid in processes if running(pid)]

    await eventually(all_gone, 2, what="every process of the service ended")
