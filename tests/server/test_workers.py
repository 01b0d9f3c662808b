"""`serve --workers 2`: two processes on one port, one store, events seen by every watcher.

The server runs as the real console script. Which worker holds a connection is
read from /proc (the sockets on the server's port and the workers' descriptors),
so the test knows its watchers and its writers sit on both workers.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections import Counter
from pathlib import Path

import grpc
import pytest

from pioneer_grpc.v1 import (
    history_pb2,
    history_service_pb2,
    history_service_pb2_grpc,
    manifest_service_pb2,
    manifest_service_pb2_grpc,
    prompt_compiler_service_pb2,
    prompt_compiler_service_pb2_grpc,
    prompt_pb2,
    turn_service_pb2,
    turn_service_pb2_grpc,
)

SCRIPT = Path(sys.executable).parent / "pioneer-grpc"
pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads /proc to place connections")


async def start_workers(home: Path, database_url: str) -> tuple[asyncio.subprocess.Process, str]:
    args = [str(SCRIPT), "serve", "--workers", "2", "--listen", "127.0.0.1:0", "--home", str(home)]
    args += ["--grace-seconds", "0.5", "--heartbeat-seconds", "0.2", "--log-level", "WARNING"]
    if database_url:
        args += ["--database-url", database_url]
    proc = await asyncio.create_subprocess_exec(*args, stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), 120)).decode()
    assert "serving on " in line, line
    assert "(2 workers)" in line, line
    return proc, line.split("serving on ", 1)[1].split()[0]


def children(pid: int) -> list[int]:
    """The worker processes of the supervisor `pid` (not multiprocessing's resource tracker)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return [p for p in found if b"resource_tracker" not in Path(f"/proc/{p}/cmdline").read_bytes()]


def connections_per_worker(supervisor: int, port: int) -> Counter[int]:
    """Established connections on `port`, counted by the worker process that holds them."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                inodes.add(fields[9])
    counts: Counter[int] = Counter()
    for pid in children(supervisor):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                counts[pid] += 1
    return counts


async def watch(channel: grpc.aio.Channel, expected: int, live: asyncio.Event) -> list[int]:
    call = manifest_service_pb2_grpc.ManifestServiceStub(channel).WatchManifests(
        manifest_service_pb2.WatchManifestsRequest(live_only=True)
    )
    seen: list[int] = []
    while len(seen) < expected:
        response = await call.read()
        assert response is not grpc.aio.EOF
        if response.HasField("heartbeat"):
            live.set()
        else:
            seen.append(response.event.event_id)
    call.cancel()
    return seen


def running(pid: int) -> bool:
    try:
        # The state follows the command name, which may hold spaces and parentheses (process titles).
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def connect(address: str) -> grpc.aio.Channel:
    """A channel with its own connection (channels of one process share connections by default)."""
    return grpc.aio.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])


async def stop(proc: asyncio.subprocess.Process, workers: list[int]) -> None:
    proc.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(proc.wait(), 60) == 0
    assert not [pid for pid in workers if running(pid)]


async def a_channel_on_each_worker(
    proc: asyncio.subprocess.Process, address: str
) -> tuple[list[grpc.aio.Channel], list[grpc.aio.Channel]]:
    """Channels opened one at a time until each worker holds one (the kernel spreads new
    connections): every channel opened, and one held by each worker."""
    port = int(address.rsplit(":", 1)[1])
    opened: list[grpc.aio.Channel] = []
    held: dict[int, grpc.aio.Channel] = {}
    before: Counter[int] = Counter()
    while len(held) < 2:
        assert len(opened) < 64, "every connection went to one worker"
        channel = connect(address)
        await channel.channel_ready()  # accepted and answered: the worker holds its socket
        opened.append(channel)
        now = connections_per_worker(proc.pid, port)
        for pid in now:
            if now[pid] > before[pid]:
                held.setdefault(pid, channel)
        before = now
    return opened, list(held.values())


async def test_every_watcher_sees_the_events_of_every_worker(database_url, tmp_path):
    proc, address = await start_workers(tmp_path / "home", database_url)
    workers = children(proc.pid)
    assert len(workers) == 2
    channels, _ = await a_channel_on_each_worker(proc, address)
    try:
        compiles = 3 * len(channels)
        lives = [asyncio.Event() for _ in channels]
        watchers = [
            asyncio.create_task(watch(ch, compiles, live)) for ch, live in zip(channels, lives, strict=True)
        ]
        await asyncio.wait_for(asyncio.gather(*(live.wait() for live in lives)), 30)
        produced = []
        for n in range(compiles):
            stub = prompt_compiler_service_pb2_grpc.PromptCompilerServiceStub(channels[n % len(channels)])
            reply = await stub.CompilePrompt(
                prompt_compiler_service_pb2.CompilePromptRequest(
                    input=prompt_pb2.PromptCompileInput(dynamic_context=f"round {n}"),
                    thread_id="t",
                    turn_id=f"turn-{n}",
                )
            )
            produced.append(reply.manifest_event_id)
        for seen in await asyncio.wait_for(asyncio.gather(*watchers), 60):
            assert seen == sorted(produced)
    finally:
        for channel in channels:
            await channel.close()
        await stop(proc, workers)


async def test_rounds_through_both_workers_see_one_history(database_url, tmp_path):
    proc, address = await start_workers(tmp_path / "home", database_url)
    workers = children(proc.pid)
    assert len(workers) == 2
    channels, (one, other) = await a_channel_on_each_worker(proc, address)
    try:
        history = history_service_pb2_grpc.HistoryServiceStub(one)
        await history.CreateThread(
            history_service_pb2.CreateThreadRequest(thread_id="t", config=history_pb2.ThreadConfig(model="m"))
        )
        said: list[str] = []
        for n in range(12):
            # Each round on the worker the turn before did not complete, completed on the other.
            here, there = (one, other) if n % 2 == 0 else (other, one)
            reply = await turn_service_pb2_grpc.TurnServiceStub(here).PrepareTurn(
                turn_service_pb2.PrepareTurnRequest(
                    thread_id="t",
                    turn_id=f"u{n}",
                    new_entries=[
                        history_pb2.ConversationEntry(entry_id=f"e{n}", role=1, content=f"message {n}")
                    ],
                )
            )
            said.append(f"message {n}")
            assert [m.content for m in reply.chat_request.messages] == said
            await history_service_pb2_grpc.HistoryServiceStub(there).CompleteTurn(
                history_service_pb2.CompleteTurnRequest(thread_id="t", turn_id=f"u{n}")
            )
    finally:
        for channel in channels:
            await channel.close()
        await stop(proc, workers)
