"""`make bench` (console part): does the console cost a PrepareTurn anything when no page is open?

    .venv/bin/python scripts/bench_console.py [--rounds 3] [--concurrency 1] [--seed-entries 200]

Three `pioneer-grpc serve` subprocesses on loopback, each with its own SQLite
home prepared alike:

    plain  no --http-listen
    http   --http-listen set, no page open (nothing calls the HTTP address)
    kept   --http-listen set and --keep-rendered-requests (each round's prompt,
           messages and provider body written to the database)

The Go load generator drives PrepareTurn (the realistic thread of `make bench`:
200 entries with tool pairs, about 100,000 tokens, one turn repeated, an
Anthropic body rendered), then an Echo moving the same bytes both ways right
after it on the same server; a run's figure is PrepareTurn p50 / echo p50, as in
scripts/bench.py, so the noise of a shared machine cancels within a run. The
servers take turns (plain http kept, plain http kept, ...) so drift hits each.
Reported: each server's median ratio with its spread (min..max over the runs),
and the ratio of medians: http / plain (the console's cost with no page open)
and kept / http (the cost of keeping rounds). The goal for http / plain is 1.0
within the spread.

PIONEER_BENCH_SECONDS sets the measuring time of each load run (default 5).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import sqlite3
import statistics
import tempfile
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import against_echo, load
from bench_inputs import prepare_home
from bench_server import served


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


SERVERS: dict[str, list[str]] = {
    "plain": [],
    "http": ["--http-listen"],
    "kept": ["--http-listen", "--keep-rendered-requests"],
}


@dataclass
class Server:
    name: str
    address: str
    thread: str = ""


@asynccontextmanager
async def serve(name: str, home: Path) -> AsyncIterator[Server]:
    extra: list[str] = []
    for flag in SERVERS[name]:
        extra.append(flag)
        if flag == "--http-listen":
            extra.append(f"127.0.0.1:{free_port()}")
    async with served(home, *extra) as (address, _):
        yield Server(name, address)


def seed(server: Server, seed_entries: int) -> None:
    """Creates the server's thread with one unmeasured call, so no measured run pays for seeding."""
    result = load(server.address, "prepare-turn", 1, requests=1, warmup="0s", seed_entries=seed_entries,
                  provider="anthropic")
    server.thread = result["thread"]


def one_run(server: Server, concurrency: int) -> dict[str, Any]:
    """PrepareTurn, then an echo of the same sizes right after it (bench.py's against_echo)."""
    return against_echo(
        server.address, "prepare-turn", concurrency, thread=server.thread, provider="anthropic"
    )


async def measure(rounds: int, concurrency: int, seed_entries: int) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in SERVERS}
    with tempfile.TemporaryDirectory(prefix="pioneer-bench-console-") as tmp:
        async with AsyncExitStack() as stack:
            servers = []
            for name in SERVERS:
                home = Path(tmp) / name
                home.mkdir()
                prepare_home(home)
                servers.append(await stack.enter_async_context(serve(name, home)))
            for server in servers:
                await asyncio.to_thread(seed, server, seed_entries)
            for _ in range(rounds):
                for server in servers:
                    runs[server.name].append(await asyncio.to_thread(one_run, server, concurrency))
        result = summary(concurrency, seed_entries, runs)
        result["kept_rounds_stored"] = kept_rows(Path(tmp) / "kept")
    return result


def kept_rows(home: Path) -> int:
    """Rounds the kept server holds at the end (read-only): proof that it kept while measured."""
    with contextlib.closing(sqlite3.connect(f"file:{home / 'pioneer.db'}?mode=ro", uri=True)) as db:
        return int(db.execute("SELECT count(*) FROM rendered_rounds").fetchone()[0])


def summary(concurrency: int, seed_entries: int, runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    ratios = {name: [run["p50_vs_echo"] for run in runs[name]] for name in runs}
    medians = {name: statistics.median(values) for name, values in ratios.items()}
    result: dict[str, Any] = {
        "figure": "prepare-turn: console with no page open, kept rounds",
        "concurrency": concurrency,
        "seed_entries": seed_entries,
        "runs_each": len(ratios["plain"]),
    }
    for name, values in ratios.items():
        result[f"{name}_p50_vs_echo"] = round(medians[name], 3)
        result[f"{name}_spread"] = [round(min(values), 3), round(max(values), 3)]
        result[f"{name}_p50_ms"] = statistics.median(run["p50_ms"] for run in runs[name])
    result["http_vs_plain"] = round(medians["http"] / medians["plain"], 3)
    result["kept_vs_http"] = round(medians["kept"] / medians["http"], 3)
    result["kept_vs_plain"] = round(medians["kept"] / medians["plain"], 3)
    result["goal"] = "http_vs_plain 1.0 within the spread of plain"
    result["errors"] = sum(run["errors"] for name in runs for run in runs[name])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="runs per server, the servers taking turns")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--seed-entries", type=int, default=200, help="entries of each server's thread")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.rounds, args.concurrency, args.seed_entries))))


if __name__ == "__main__":
    main()
