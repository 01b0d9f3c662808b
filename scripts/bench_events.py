"""Manifest event delivery latency: from the committing transaction to each observer.

    .venv/bin/python scripts/bench_events.py [--observers 100] [--events 200] [--pg-url URL]

Servers run as `pioneer-grpc serve` subprocesses; observers and the compiling
client run here. One server on SQLite: observers and compiles on the same server.
Two replicas on PostgreSQL (--pg-url or $PIONEER_BENCH_PG_URL / $PIONEER_TEST_PG_URL,
an admin URL: a scratch database is created and dropped): observers on one
replica, compiles through CompilePrompt on the other, so every event crosses
LISTEN/NOTIFY. Latency = time an observer read the event - the event's
create_time, which the server sets inside the inserting transaction (same
machine, same clock), so it includes the commit itself. For scale, the same run
measures a plain Echo round trip on the observers' server (the machine's noise
floor), and reports p99 as a multiple of it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
import grpc
from bench_server import served

from pioneer_grpc.v1 import echo_service_pb2, echo_service_pb2_grpc, prompt_pb2
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from pioneer_grpc.v1 import manifest_service_pb2_grpc as service_grpc
from pioneer_grpc.v1 import prompt_compiler_service_pb2 as compiler_pb2
from pioneer_grpc.v1 import prompt_compiler_service_pb2_grpc as compiler_grpc

STREAMS_PER_CHANNEL = 10


@asynccontextmanager
async def serve(database_url: str, home: Path) -> AsyncIterator[str]:
    """A `pioneer-grpc serve` subprocess on `database_url` (empty: the home's SQLite); yields its address."""
    async with served(home, *(["--database-url", database_url] if database_url else [])) as (address, _):
        yield address


@asynccontextmanager
async def scratch_database(admin_url: str) -> AsyncIterator[str]:
    name = "bench_" + uuid.uuid4().hex[:12]
    plain = admin_url.replace("postgresql+asyncpg", "postgresql")
    conn = await asyncpg.connect(plain)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    try:
        yield f"{admin_url.rsplit('/', 1)[0]}/{name}"
    finally:
        conn = await asyncpg.connect(plain)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


async def observe(
    channel: grpc.aio.Channel, expected: int, live: asyncio.Event, latencies: list[float], order: list[int]
) -> None:
    call = service_grpc.ManifestServiceStub(channel).WatchManifests(
        service_pb2.WatchManifestsRequest(live_only=True)
    )
    received = 0
    while received < expected:
        response = await call.read()
        now = time.time()
        if response is grpc.aio.EOF:
            raise RuntimeError("stream ended early")
        if response.HasField("heartbeat"):
            live.set()
            continue
        latencies.append(now - response.event.create_time.ToNanoseconds() / 1e9)
        order.append(response.event.event_id)
        received += 1
    call.cancel()


async def echo_round_trip_ms(channel: grpc.aio.Channel, calls: int = 200) -> float:
    stub = echo_service_pb2_grpc.EchoServiceStub(channel)
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await stub.Echo(echo_service_pb2.EchoRequest(payload=b"x" * 64))
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def measure(
    producer_addr: str, observer_addr: str, observers: int, events: int, interval: float
) -> dict:
    channel_count = -(-observers // STREAMS_PER_CHANNEL)
    channels = [grpc.aio.insecure_channel(observer_addr) for _ in range(channel_count)]
    producer = grpc.aio.insecure_channel(producer_addr)
    try:
        latencies: list[float] = []
        orders: list[list[int]] = [[] for _ in range(observers)]
        lives = [asyncio.Event() for _ in range(observers)]
        tasks = [
            asyncio.create_task(
                observe(channels[i // STREAMS_PER_CHANNEL], events, lives[i], latencies, orders[i])
            )
            for i in range(observers)
        ]
        await asyncio.wait_for(asyncio.gather(*(live.wait() for live in lives)), 60)
        echo_ms = await echo_round_trip_ms(channels[0])
        compile_stub = compiler_grpc.PromptCompilerServiceStub(producer)
        produced = []
        for n in range(events):
            response = await compile_stub.CompilePrompt(
                compiler_pb2.CompilePromptRequest(
                    input=prompt_pb2.PromptCompileInput(dynamic_context=f"round {n}"),
                    thread_id="bench",
                    turn_id=f"turn-{n}",
                )
            )
            produced.append(response.manifest_event_id)
            await asyncio.sleep(interval)
        await asyncio.wait_for(asyncio.gather(*tasks), 60)
    finally:
        for channel in [*channels, producer]:
            await channel.close()
    millis = sorted(x * 1000 for x in latencies)
    return {
        "observers": observers,
        "events": events,
        "deliveries": len(millis),
        "all_in_order": all(order == produced for order in orders),
        "p50_ms": round(statistics.median(millis), 2),
        "p99_ms": round(millis[min(len(millis) - 1, int(len(millis) * 0.99))], 2),
        "max_ms": round(millis[-1], 2),
        "echo_p50_ms": round(echo_ms, 3),
        "p99_over_echo": round(millis[min(len(millis) - 1, int(len(millis) * 0.99))] / echo_ms, 1),
    }


async def bench_delivery(
    *,
    observers: int = 100,
    events: int = 200,
    interval: float = 0.01,
    database_url: str = "",
    replicas: int = 1,
) -> dict:
    """One server (SQLite unless `database_url`), or two replicas on `database_url` (PostgreSQL)."""
    if replicas not in (1, 2) or (replicas == 2 and not database_url.startswith("postgresql")):
        raise ValueError("replicas is 1, or 2 with a PostgreSQL database_url")
    with tempfile.TemporaryDirectory(prefix="bench-events-") as tmp:
        async with serve(database_url, Path(tmp) / "a") as first:
            if replicas == 1:
                result = await measure(first, first, observers, events, interval)
            else:
                async with serve(database_url, Path(tmp) / "b") as second:
                    result = await measure(first, second, observers, events, interval)
    backend = "postgresql" if database_url.startswith("postgresql") else "sqlite"
    return {"backend": backend, "replicas": replicas, **result}


async def main(args: argparse.Namespace) -> None:
    runs = [await bench_delivery(observers=args.observers, events=args.events, interval=args.interval)]
    if args.pg_url:
        async with scratch_database(args.pg_url) as url:
            for replicas in (1, 2):
                runs.append(
                    await bench_delivery(
                        observers=args.observers,
                        events=args.events,
                        interval=args.interval,
                        database_url=url,
                        replicas=replicas,
                    )
                )
    else:
        print("no PostgreSQL URL (--pg-url or $PIONEER_BENCH_PG_URL): replica run skipped", file=sys.stderr)
    for run in runs:
        print(json.dumps(run))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--observers", type=int, default=100)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--interval", type=float, default=0.01, help="seconds between compiles")
    parser.add_argument(
        "--pg-url",
        default=os.environ.get("PIONEER_BENCH_PG_URL") or os.environ.get("PIONEER_TEST_PG_URL", ""),
        help="PostgreSQL admin URL (postgresql+asyncpg://...)",
    )
    asyncio.run(main(parser.parse_args()))
