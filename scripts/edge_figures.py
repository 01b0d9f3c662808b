"""Figures of the server's edge (issue rows on unknown methods, idle connections, a stuck collector).

    .venv/bin/python scripts/edge_figures.py [unknown_methods] [known_method] [idle_connections] \
        [stuck_collector]

known_method is unknown_methods' control: the same unauthenticated calls to a method the server has.

Starts real servers (`pioneer-grpc serve`) on loopback, one per figure, each stopped at the end; prints one
line per figure. Bounded: every wait has a timeout.
"""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

SCRIPT = Path(sys.executable).parent / "pioneer-grpc"
TOKEN = "figures-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def serve(home: Path, port: int, *extra: str, nofile: int | None = None) -> subprocess.Popen:
    command = [str(SCRIPT), "serve", "--home", str(home), "--listen", f"127.0.0.1:{port}", *extra]
    if nofile is not None:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        command = ["prlimit", f"--nofile={nofile}:{hard}", *command]
    log = (home.parent / f"{home.name}.log").open("wb")
    return subprocess.Popen(command, stdout=log, stderr=log)


async def serving(address: str, seconds: float = 60) -> None:
    async with grpc.aio.insecure_channel(address) as channel, asyncio.timeout(seconds):
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                if (await stub.Check(health_pb2.HealthCheckRequest(), timeout=1)).status == 1:
                    return
            except grpc.aio.AioRpcError:
                await asyncio.sleep(0.1)


def soft_nofile(pid: int) -> str:
    limits = Path(f"/proc/{pid}/limits").read_text().splitlines()
    return next(line.split()[3] for line in limits if line.startswith("Max open files"))


def scrape(port: int) -> str:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/metrics", headers={"authorization": f"Bearer {TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(response.read().decode())


def stop(proc: subprocess.Popen) -> float:
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return time.monotonic() - started


def made_up_path(n: int) -> str:
    return f"/x{n}.{'m' * 4096}/M{n}"


def known_path(n: int) -> str:
    return "/pioneer.v1.EchoService/Echo"


async def made_up(
    address: str, first: int, count: int, path: Callable[[int], str] = made_up_path
) -> dict[str, int]:
    codes: dict[str, int] = {}
    async with grpc.aio.insecure_channel(address) as channel:

        async def one(n: int) -> None:
            call = channel.unary_unary(path(n))
            try:
                await call(b"", timeout=30)
                code = "OK"
            except grpc.aio.AioRpcError as error:
                code = error.code().name
            codes[code] = codes.get(code, 0) + 1

        for start in range(first, first + count, 200):
            await asyncio.gather(*(one(n) for n in range(start, min(start + 200, first + count))))
    return codes


async def unknown_methods(directory: Path) -> None:
    await _unauthenticated(directory / "a", made_up_path, "made-up 4 KB methods")


async def known_method(directory: Path) -> None:
    """The control of unknown_methods: the same calls to a method the server has."""
    await _unauthenticated(directory / "k", known_path, "a known method (the control)")


async def _unauthenticated(home: Path, path: Callable[[int], str], what: str) -> None:
    port, metrics = free_port(), free_port()
    proc = serve(home, port, "--token", TOKEN, "--metrics-listen", f"127.0.0.1:{metrics}")
    try:
        await serving(f"127.0.0.1:{port}")
        await made_up(f"127.0.0.1:{port}", 0, 4000, path)
        before, lines_before = rss_mib(proc.pid), len(scrape(metrics).splitlines())
        codes = await made_up(f"127.0.0.1:{port}", 4000, 10_000, path)
        text = scrape(metrics)
        print(
            f"10,000 unauthenticated calls to {what}: {codes}; RSS {before:.1f} -> "
            f"{rss_mib(proc.pid):.1f} MiB; /metrics lines {lines_before} -> {len(text.splitlines())}, "
            f"{len(text.encode()) / 1024:.0f} KiB"
        )
    finally:
        stop(proc)


async def idle_connections(directory: Path) -> None:
    port, metrics = free_port(), free_port()
    proc = serve(directory / "b", port, "--metrics-listen", f"127.0.0.1:{metrics}", nofile=1024)
    idle: list[socket.socket] = []
    try:
        await serving(f"127.0.0.1:{port}")
        soft = soft_nofile(proc.pid)
        for _ in range(1100):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        gauge = await asyncio.to_thread(scrape, metrics)
        connections = next(
            line for line in gauge.splitlines() if line.startswith("pioneer_grpc_connections ")
        )
        for _ in range(1000):
            idle.append(socket.create_connection(("127.0.0.1", metrics), timeout=5))
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            health = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=5
            )
            echo = await channel.unary_unary("/pioneer.v1.EchoService/Echo")(b"", timeout=5)
        started = time.monotonic()
        await asyncio.to_thread(scrape, metrics)
        print(
            f"1,100 idle gRPC connections under a soft limit of 1024: server soft limit {soft}, "
            f"{connections}; then 1,000 idle metrics connections: a new client's health {health.status} "
            f"(1 = SERVING), "
            f"Echo {'ok' if echo == b'' else echo!r}, "
            f"a scrape answered after {time.monotonic() - started:.1f} s, "
            f"server threads {len(os.listdir(f'/proc/{proc.pid}/task'))}"
        )
    finally:
        for sock in idle:
            sock.close()
        stop(proc)


async def stuck_collector(directory: Path) -> None:
    port = free_port()
    collector = socket.socket()
    collector.bind(("127.0.0.1", 0))
    collector.listen(100)  # accepts, never answers
    endpoint = f"http://127.0.0.1:{collector.getsockname()[1]}"
    proc = serve(directory / "c", port, "--otlp-endpoint", endpoint, "--grace-seconds", "5")
    try:
        await serving(f"127.0.0.1:{port}")
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            for _ in range(50):
                await channel.unary_unary("/pioneer.v1.EchoService/Echo")(b"", timeout=5)
        seconds = stop(proc)
        print(f"stuck collector, grace 5 s: SIGTERM to exit {seconds:.1f} s (exit {proc.returncode})")
    finally:
        collector.close()
        if proc.poll() is None:
            stop(proc)


async def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        chosen = sys.argv[1:] or ["unknown_methods", "known_method", "idle_connections", "stuck_collector"]
        for figure in (globals()[name] for name in chosen):
            await asyncio.wait_for(figure(Path(directory)), 300)


if __name__ == "__main__":
    asyncio.run(main())
