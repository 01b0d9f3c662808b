"""2,000 connections without a token to the HTTP listener of a server whose descriptor limit is 1,024
(soft and hard, set in the server process): idle ones, ones stopped mid-headers and mid-body.

With the default caps a new gRPC client still gets health and a write, each within a 1 s deadline,
the flood's connections are all let go by the deadlines, and the log grows by less than 100 KB.
With caps an operator set past the descriptor limit, accepts fail for lack of descriptors: that is
logged once per interval, not per attempt, and the server serves again once the flood is let go.
"""

from __future__ import annotations

import asyncio
import resource
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from pioneer_grpc.v1 import history_service_pb2, history_service_pb2_grpc
from tests.builders import own_turn
from tests.chaos.test_crash_and_startup import SCRIPT, _wait_serving
from tests.support import eventually, free_port, unavailable_here

TOKEN = "tok-flood-0d4e"
DESCRIPTORS = 1024
FLOOD = 2000
HEADER_SECONDS = 3
LOG_BUDGET_BYTES = 100 * 1024
# The deadline each of the new client's calls must meet.
NEW_CLIENT_DEADLINE = 1.0
SERVING = health_pb2.HealthCheckResponse.SERVING


def _limit_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTORS, DESCRIPTORS))


@pytest.fixture
def room_for_the_flood() -> Iterator[None]:
    """The test process itself holds the flood's sockets: its own soft limit goes up to its hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = FLOOD + 1024
    raised = hard if hard == resource.RLIM_INFINITY else max(hard, wanted)
    try:
        # Past the hard limit only as root (CI runs as root).
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), raised))
    except (ValueError, OSError):
        unavailable_here(f"the test process may open {hard} descriptors, it needs {wanted}")
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _serve(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[bytes], int, int, int, Path]:
    port, http_port, metrics_port = free_port(), free_port(), free_port()
    log = tmp_path / "server.log"
    command = [str(SCRIPT), "serve", "--home", str(tmp_path / "home"), "--listen", f"127.0.0.1:{port}"]
    command += ["--http-listen", f"127.0.0.1:{http_port}", "--metrics-listen", f"127.0.0.1:{metrics_port}"]
    command += ["--token", TOKEN, "--http-header-timeout-seconds", str(HEADER_SECONDS), *extra]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=out, preexec_fn=_limit_descriptors)
    return proc, port, http_port, metrics_port, log


def _shapes(http_port: int) -> list[bytes]:
    """What each flood connection sends before it stops: nothing, half its headers, half its body."""
    head = b"POST /pioneer.v1.HistoryService/AppendEntries HTTP/1.1\r\nhost: 127.0.0.1:%d\r\n" % http_port
    return [
        b"",
        head + b"content-type: application/json\r\n",
        head + b'content-type: application/json\r\ncontent-length: 1000\r\n\r\n{"threadId": "t", ',
    ]


async def _flood(http_port: int, shapes: list[bytes]) -> list[asyncio.StreamWriter]:
    writers = []
    for n in range(FLOOD):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", http_port)
        except OSError:
            continue  # the kernel's accept queue was full: that connection never was
        writer.write(shapes[n % len(shapes)])
        writers.append(writer)
    return writers


async def _http_connections(metrics_port: int) -> float:
    async with httpx.AsyncClient() as client:
        text = (await client.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5)).text
    return next(
        float(line.split()[-1]) for line in text.splitlines() if line.startswith("pioneer_http_connections ")
    )


async def _let_go(metrics_port: int) -> None:
    """Until the server holds no HTTP connection (a scrape may fail while it has no descriptor left)."""

    async def none_open() -> bool:
        try:
            return await _http_connections(metrics_port) == 0
        except httpx.HTTPError:
            return False

    await eventually(none_open, within=HEADER_SECONDS + 60, step=0.2, what="every flood connection let go")


async def _new_client(port: int, n: int) -> tuple[float, float]:
    """A client on a new connection: health, then an append, each within the deadline; their latencies."""
    metadata = (("authorization", f"Bearer {TOKEN}"),)
    async with grpc.aio.insecure_channel(
        f"127.0.0.1:{port}", options=[("grpc.use_local_subchannel_pool", 1)]
    ) as ch:
        started = time.perf_counter()
        status = await health_pb2_grpc.HealthStub(ch).Check(
            health_pb2.HealthCheckRequest(), timeout=NEW_CLIENT_DEADLINE
        )
        health_at = time.perf_counter()
        assert status.status == SERVING
        await history_service_pb2_grpc.HistoryServiceStub(ch).AppendEntries(
            history_service_pb2.AppendEntriesRequest(thread_id="t", entries=[own_turn(f"new-{n}")]),
            metadata=metadata,
            timeout=NEW_CLIENT_DEADLINE,
        )
        return health_at - started, time.perf_counter() - health_at


async def _prepare(port: int) -> None:
    metadata = (("authorization", f"Bearer {TOKEN}"),)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = history_service_pb2_grpc.HistoryServiceStub(channel)
        await stub.CreateThread(history_service_pb2.CreateThreadRequest(thread_id="t"), metadata=metadata)
        # The first append loads the tokenizer: done before the flood, as on a server that has served.
        await stub.AppendEntries(
            history_service_pb2.AppendEntriesRequest(thread_id="t", entries=[own_turn("warm")]),
            metadata=metadata,
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    finally:
        proc.kill()


async def test_a_flood_without_a_token_leaves_health_and_writes_to_a_new_client(tmp_path, room_for_the_flood):
    proc, port, http_port, metrics_port, log = _serve(tmp_path)
    try:
        await _wait_serving(f"127.0.0.1:{port}", proc)
        await _prepare(port)
        before = log.stat().st_size
        writers = await _flood(http_port, _shapes(http_port))
        latencies = [await _new_client(port, n) for n in range(3)]
        print(
            f"{len(writers)} flood connections; new client health/append ms: "
            + ", ".join(f"{h * 1000:.1f}/{w * 1000:.1f}" for h, w in latencies)
        )
        # The deadlines let every flood connection go.
        await _let_go(metrics_port)
        await _new_client(port, 3)
        grown = log.stat().st_size - before
        print(f"log grew {grown:,} bytes")
        assert grown < LOG_BUDGET_BYTES, log.read_text()[-3000:]
        for writer in writers:
            writer.close()
    finally:
        _stop(proc)


async def test_accepts_failing_for_lack_of_descriptors_are_logged_once_per_interval(
    tmp_path, room_for_the_flood
):
    # Caps past the descriptor limit: the HTTP listener accepts until the process has no descriptor left.
    proc, port, http_port, metrics_port, log = _serve(tmp_path, "--max-connections", "5000")
    try:
        await _wait_serving(f"127.0.0.1:{port}", proc)
        await _prepare(port)
        before = log.stat().st_size
        started = time.monotonic()
        # Connections that send nothing: each holds a descriptor until the header timeout.
        writers = await _flood(http_port, [b""])
        # Past the header timeout the flood is let go, and the server serves a new client again.
        await _let_go(metrics_port)
        await _new_client(port, 0)
        elapsed = time.monotonic() - started
        text = log.read_text()[before:]
        failed = text.count("HTTP listener: accept failed (EMFILE)")
        print(f"{len(writers)} flood connections; {failed} accept-failure lines in {elapsed:.0f} s")
        assert 1 <= failed <= elapsed / 10 + 1
        assert "Traceback" not in text
        assert len(text.encode()) < LOG_BUDGET_BYTES
        for writer in writers:
            writer.close()
    finally:
        _stop(proc)
