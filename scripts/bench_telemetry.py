"""`make bench` (telemetry part): PrepareTurn with tracing and metrics on, against off.

    .venv/bin/python scripts/bench_telemetry.py [--rounds 3] [--concurrency 1 16]

Three `pioneer-grpc serve` subprocesses on loopback, each with its own SQLite
home prepared alike: one plain, one with --otlp-endpoint (an OTLP/gRPC trace sink
in this process receives the spans) and --metrics-listen (scraped once at the
end), and one with metrics only, to tell the two costs apart. The Go load
generator drives PrepareTurn on a 100-turn thread, the servers taking turns run
after run so drift of a shared machine hits each; the figure is the ratio of
medians: p50 on / p50 off, throughput off / on, and the server process's CPU
time per request on / off (read from /proc, all its threads; the steadiest of the
three on a shared machine). The goal is at most 1.1x. The thread is seeded once
per server, so no measured run pays for seeding.

PIONEER_BENCH_SECONDS sets the measuring time of each load run (default 5).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from bench_inputs import prepare_home
from bench_server import served
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from pioneer_grpc.v1 import history_pb2, history_service_pb2, history_service_pb2_grpc

ROOT = Path(__file__).resolve().parent.parent
LOADER = ROOT / "clients" / "go" / "bin" / "pioneer-load"
SECONDS = os.environ.get("PIONEER_BENCH_SECONDS", "5")
SEED_TURNS = 100


class TraceSink:
    """Accepts OTLP trace exports as raw bytes; decodes them only when asked, after measuring.

    Decoding as they arrive would spend this machine's CPU, which the server
    under test shares, on work a real collector does elsewhere.
    """

    EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

    def __init__(self) -> None:
        self.requests: list[bytes] = []

    def handler(self) -> grpc.GenericRpcHandler:
        async def export(request: bytes, context: Any) -> bytes:
            self.requests.append(request)
            return b""  # an empty ExportTraceServiceResponse

        method = grpc.unary_unary_rpc_method_handler(export)
        sink = self

        class Handler(grpc.GenericRpcHandler):
            def service(self, details: Any) -> Any:
                return method if details.method == sink.EXPORT else None

        return Handler()

    @property
    def spans(self) -> int:
        count = 0
        for raw in self.requests:
            request = trace_service_pb2.ExportTraceServiceRequest.FromString(raw)
            count += sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
        return count


@asynccontextmanager
async def trace_sink() -> AsyncIterator[tuple[str, TraceSink]]:
    sink = TraceSink()
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((sink.handler(),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"http://127.0.0.1:{port}", sink
    finally:
        await server.stop(0)


@dataclass(frozen=True)
class Server:
    address: str
    pid: int
    thread_id: str


def cpu_seconds(pid: int) -> float:
    """User plus system CPU of the process, all its threads (the span exporter's too)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def seed_thread(address: str, thread_id: str, turns: int) -> None:
    """The load generator's 100-turn thread, written once so no run pays for seeding."""
    async with grpc.aio.insecure_channel(address) as channel:
        history = history_service_pb2_grpc.HistoryServiceStub(channel)
        await history.CreateThread(
            history_service_pb2.CreateThreadRequest(
                thread_id=thread_id, config=history_pb2.ThreadConfig(model="gpt-4o-mini")
            )
        )
        for n in range(1, turns + 1):
            turn = f"seed-{n:03d}"
            entries = [
                history_pb2.ConversationEntry(
                    entry_id=f"{turn}-u",
                    turn_id=turn,
                    role=history_pb2.ENTRY_ROLE_USER,
                    content=f"Round {n}: please check the Go client and tell me what is left.",
                ),
                history_pb2.ConversationEntry(
                    entry_id=f"{turn}-a",
                    turn_id=turn,
                    role=history_pb2.ENTRY_ROLE_ASSISTANT,
                    content=f"Round {n}: I read the files you named and the tests pass. Next: the README.",
                ),
            ]
            await history.AppendEntries(
                history_service_pb2.AppendEntriesRequest(thread_id=thread_id, entries=entries)
            )
            await history.CompleteTurn(
                history_service_pb2.CompleteTurnRequest(thread_id=thread_id, turn_id=turn)
            )


@asynccontextmanager
async def serve(home: Path, *extra: str) -> AsyncIterator[Server]:
    async with served(home, *extra) as (address, pid):
        await seed_thread(address, "bench", SEED_TURNS)
        yield Server(address, pid, "bench")


def load(server: Server, concurrency: int) -> dict[str, Any]:
    """One measured run; adds the server's CPU milliseconds per request."""
    args = [
        str(LOADER),
        "-addr",
        server.address,
        "-rpc",
        "prepare-turn",
        "-concurrency",
        str(concurrency),
        "-duration",
        f"{SECONDS}s",
        "-warmup",
        "0s",
        "-thread",
        server.thread_id,
        "-provider",
        "anthropic",
    ]
    before = cpu_seconds(server.pid)
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    used = cpu_seconds(server.pid) - before
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result["cpu_ms"] = 1000 * used / max(1, result["requests"])
    return result


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def scrape(address: str) -> dict[str, float]:
    """A few of the served counters, summed over their labels."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
        text = response.read().decode()
    wanted = (
        "grpc_server_handled_total",
        "pioneer_prompt_rounds_total",
        "pioneer_compile_cache_lookups_total",
    )
    totals = dict.fromkeys(wanted, 0.0)
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in totals:
            totals[name] += float(line.rsplit(" ", 1)[1])
    return totals


async def measure(rounds: int, concurrencies: list[int]) -> list[dict[str, Any]]:
    results = []
    with tempfile.TemporaryDirectory(prefix="pioneer-bench-telemetry-") as tmp:
        homes = {name: Path(tmp) / name for name in ("off", "on", "metrics")}
        for home in homes.values():
            home.mkdir()
            prepare_home(home)
        metrics_address = f"127.0.0.1:{free_port()}"
        async with (
            trace_sink() as (endpoint, sink),
            serve(homes["off"]) as off,
            serve(homes["on"], "--otlp-endpoint", endpoint, "--metrics-listen", metrics_address) as on,
            serve(homes["metrics"], "--metrics-listen", f"127.0.0.1:{free_port()}") as metrics_only,
        ):
            servers = {"off": off, "on": on, "metrics": metrics_only}
            for concurrency in concurrencies:
                runs: dict[str, list[dict[str, Any]]] = {name: [] for name in servers}
                for _ in range(rounds):
                    for name, address in servers.items():
                        runs[name].append(await asyncio.to_thread(load, address, concurrency))
                results.append(summary(concurrency, runs))
            # Spans are batched: give the exporter its schedule delay (5 s) to send the last batch.
            await asyncio.sleep(6)
            metrics = scrape(metrics_address)
            spans = sink.spans
            for result in results:
                result["spans_exported"] = spans
                result["metrics_scraped"] = metrics
    return results


def summary(concurrency: int, runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Medians of each server's runs; overheads are on (tracing and metrics) and metrics only against off."""

    def median(name: str, key: str) -> float:
        return float(statistics.median(run[key] for run in runs[name]))

    result: dict[str, Any] = {
        "rpc": "prepare-turn telemetry on vs off",
        "concurrency": concurrency,
        "runs_each": len(runs["off"]),
    }
    for name in runs:
        for key in ("p50_ms", "p99_ms", "rps", "cpu_ms"):
            result[f"{key}_{name}"] = median(name, key)
    for name in ("on", "metrics"):
        prefix = "" if name == "on" else "metrics_only_"
        result[f"{prefix}latency_overhead"] = round(median(name, "p50_ms") / median("off", "p50_ms"), 3)
        result[f"{prefix}throughput_overhead"] = round(median("off", "rps") / median(name, "rps"), 3)
        result[f"{prefix}cpu_overhead"] = round(median(name, "cpu_ms") / median("off", "cpu_ms"), 3)
    result["goal"] = "<= 1.1"
    result["errors"] = sum(run["errors"] for name in runs for run in runs[name])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="load runs per server and concurrency")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16])
    args = parser.parse_args()
    for result in asyncio.run(measure(args.rounds, args.concurrency)):
        print(json.dumps(result))


if __name__ == "__main__":
    main()
