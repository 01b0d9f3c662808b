"""Soak: PrepareTurn, AppendEntries and 100 watchers against one server for a while; RSS over time.

    .venv/bin/python scripts/soak.py [--seconds 1800] [--rate 10] [--watchers 100] [--threads 20]
                                     [--backends sqlite,postgres] [--database-url URL]
    make soak; SOAK_SECONDS=300 make soak; SOAK_BACKENDS=postgres make soak

Each backend runs for `--seconds`, one after the other (both: twice as long).
The server is a `pioneer-grpc serve` subprocess on a loopback port with a fresh
home: on SQLite its default database there; on PostgreSQL the `--database-url`,
or else a throwaway cluster of its own (scripts/pg.sh, which runs with fsync=off:
the soak measures memory, not durability). Each operation is one agent round on one of
`--threads` threads, in turn: PrepareTurn (a new user entry, a compile whose
dynamic context changes every round), then AppendEntries (the assistant's reply)
and CompleteTurn. Every PrepareTurn records a manifest that all watchers
receive. The server's RSS (VmRSS of its process) is printed every `--every`
seconds with the operations done so far.

The end reports, per backend, whether RSS is flat after warm-up: the first third
of the run is warm-up, and over the rest (the last 20 minutes of a 30-minute run)
the highest sample must be within FLAT_WITHIN (10%) of the lowest. The exit code
is 1 when a backend had failures or was not flat.

With --keep-bytes N the server keeps each round's rendered request
(--keep-rendered-requests, --kept-bytes-total N). The bytes kept are read from
the database every half second (the SQLite file read-only, or PostgreSQL with
its own connection), printed with each line, and the end prints the largest seen
against N; the run fails if they ever exceed N.

With --probe LOG the server runs under scripts/memory_probe.py, which writes to LOG
every 10 s its RSS, glibc's malloc totals, gc counts and cache sizes, and every full
garbage collection: what to look at when RSS is not flat.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import grpc

from pioneer_grpc.v1 import (
    history_pb2,
    history_service_pb2,
    history_service_pb2_grpc,
    manifest_service_pb2,
    manifest_service_pb2_grpc,
    prompt_pb2,
    turn_service_pb2,
    turn_service_pb2_grpc,
)

SCRIPT = Path(sys.executable).parent / "pioneer-grpc"
ROOT = Path(__file__).resolve().parents[1]
# The first WARM_UP_SHARE of a run is warm-up; after it RSS must stay within FLAT_WITHIN of its lowest.
WARM_UP_SHARE = 1 / 3
FLAT_WITHIN = 0.10
BACKENDS = ("sqlite", "postgres")
USER = history_pb2.ENTRY_ROLE_USER
ASSISTANT = history_pb2.ENTRY_ROLE_ASSISTANT


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Soak:
    def __init__(self, address: str, args: argparse.Namespace) -> None:
        self.args = args
        self.channel = grpc.aio.insecure_channel(address)
        self.turns = turn_service_pb2_grpc.TurnServiceStub(self.channel)
        self.history = history_service_pb2_grpc.HistoryServiceStub(self.channel)
        self.done = 0
        self.failed: dict[str, int] = {}
        self.events_seen = 0

    async def setup(self) -> None:
        for t in range(self.args.threads):
            await self.history.CreateThread(
                history_service_pb2.CreateThreadRequest(
                    thread_id=f"soak-{t}", config=history_pb2.ThreadConfig(model="gpt-4o")
                )
            )

    async def round(self, n: int) -> None:
        thread_id = f"soak-{n % self.args.threads}"
        turn_id = f"turn-{n}"
        try:
            await self.turns.PrepareTurn(
                turn_service_pb2.PrepareTurnRequest(
                    thread_id=thread_id,
                    turn_id=turn_id,
                    new_entries=[
                        history_pb2.ConversationEntry(
                            entry_id=f"u-{n}", role=USER, content=f"question {n}: " + "words " * 60
                        )
                    ],
                    compile_input=prompt_pb2.PromptCompileInput(
                        profile=prompt_pb2.PROMPT_PROFILE_FULL,
                        dynamic_context=f"Round {n}; time {time.time():.0f}",
                    ),
                ),
                timeout=30,
            )
            await self.history.AppendEntries(
                history_service_pb2.AppendEntriesRequest(
                    thread_id=thread_id,
                    entries=[
                        history_pb2.ConversationEntry(
                            entry_id=f"a-{n}", turn_id=turn_id, role=ASSISTANT, content="answer " * 80
                        )
                    ],
                ),
                timeout=30,
            )
            await self.history.CompleteTurn(
                history_service_pb2.CompleteTurnRequest(thread_id=thread_id, turn_id=turn_id), timeout=30
            )
            self.done += 1
        except grpc.aio.AioRpcError as error:
            self.failed[error.code().name] = self.failed.get(error.code().name, 0) + 1

    async def watcher(self, stop: asyncio.Event) -> None:
        stub = manifest_service_pb2_grpc.ManifestServiceStub(self.channel)
        while not stop.is_set():
            call = stub.WatchManifests(manifest_service_pb2.WatchManifestsRequest(live_only=True))
            try:
                async for response in call:
                    if response.HasField("event"):
                        self.events_seen += 1
                    if stop.is_set():
                        call.cancel()
            except grpc.aio.AioRpcError:
                await asyncio.sleep(0.5)

    async def drive(self, stop: asyncio.Event) -> None:
        interval = 1.0 / self.args.rate
        started = time.monotonic()
        running: set[asyncio.Task[None]] = set()
        n = 0
        while not stop.is_set():
            task = asyncio.create_task(self.round(n))
            running.add(task)
            task.add_done_callback(running.discard)
            n += 1
            await asyncio.sleep(max(0.0, started + n * interval - time.monotonic()))
        await asyncio.gather(*running)


@dataclass
class Outcome:
    backend: str
    rounds: int
    failures: dict[str, int]
    events: int
    samples: list[tuple[float, float]]
    seconds: float
    # With --keep-bytes: the kept rounds never exceeded their bound.
    kept_within: bool = True

    @property
    def after_warm_up(self) -> list[float]:
        return [rss for t, rss in self.samples if t >= self.seconds * WARM_UP_SHARE]

    @property
    def spread(self) -> float:
        """(highest - lowest) / lowest RSS after warm-up."""
        window = self.after_warm_up
        return (max(window) - min(window)) / min(window) if window and min(window) > 0 else 0.0

    @property
    def flat(self) -> bool:
        return len(self.after_warm_up) >= 2 and self.spread <= FLAT_WITHIN

    def report(self) -> str:
        window = self.after_warm_up or [0.0]
        verdict = "flat" if self.flat else "NOT FLAT"
        return (
            f"{self.backend}: rounds {self.rounds}, failures {self.failures or 0}, events delivered "
            f"{self.events}; rss start {self.samples[0][1]:.1f} MB, after warm-up "
            f"({self.seconds * WARM_UP_SHARE:.0f} s) {min(window):.1f}..{max(window):.1f} MB over "
            f"{len(self.after_warm_up)} samples, spread {self.spread:.1%} "
            f"(limit {FLAT_WITHIN:.0%}): {verdict}"
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def postgres_cluster() -> Iterator[str]:
    """A throwaway PostgreSQL cluster (scripts/pg.sh) for the run; its URL."""
    directory = tempfile.mkdtemp(prefix="pioneer-soak-pg-")
    started = subprocess.run(
        ["bash", str(ROOT / "scripts/pg.sh"), "start", directory, str(free_port())],
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        if started.returncode != 0:
            raise SystemExit(f"soak: cannot start PostgreSQL: {started.stderr.strip()}")
        yield started.stdout.strip()
    finally:
        subprocess.run(["bash", str(ROOT / "scripts/pg.sh"), "stop", directory], timeout=120)


async def run(args: argparse.Namespace, backend: str, database_url: str) -> Outcome:
    home = Path(tempfile.mkdtemp(prefix="pioneer-soak-"))
    server = [sys.executable, str(ROOT / "scripts/memory_probe.py")] if args.probe else [str(SCRIPT)]
    command = [*server, "serve", "--listen", "127.0.0.1:0", "--home", str(home), "--log-level", "WARNING"]
    if database_url:
        command += ["--database-url", database_url]
    if args.keep_bytes:
        command += ["--keep-rendered-requests", "--kept-bytes-total", str(args.keep_bytes)]
    env = {**os.environ, "PIONEER_PROBE_LOG": args.probe} if args.probe else None
    proc = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE, env=env)
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
    address = line.rsplit("serving on ", 1)[1].strip()
    soak = Soak(address, args)
    await soak.setup()
    stop = asyncio.Event()
    watchers = [asyncio.create_task(soak.watcher(stop)) for _ in range(args.watchers)]
    driver = asyncio.create_task(soak.drive(stop))
    samples: list[tuple[float, float]] = []
    started = time.monotonic()
    print(
        f"soak on {backend}: {args.seconds:g} s, {args.rate:g} rounds/s, {args.watchers} watchers, "
        f"server pid {proc.pid}"
    )
    print("   seconds   rss_mb   rounds  events_seen  kept_bytes  failures")
    kept = KeptBytes(home, database_url)
    sampler = asyncio.create_task(kept.sample(stop)) if args.keep_bytes else None
    try:
        while (elapsed := time.monotonic() - started) < args.seconds:
            samples.append((elapsed, rss_mb(proc.pid)))
            failures = soak.failed or ""
            print(
                f"{elapsed:10.0f} {samples[-1][1]:8.1f} {soak.done:8d} {soak.events_seen:12d}"
                f"  {'-' if kept.last is None else kept.last:>10}  {failures}",
                flush=True,
            )
            await asyncio.sleep(min(args.every, max(0.1, args.seconds - elapsed)))
        samples.append((time.monotonic() - started, rss_mb(proc.pid)))
    finally:
        stop.set()
        await driver
        if sampler is not None:
            await sampler
        for task in watchers:
            task.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
        await soak.channel.close()
        proc.terminate()
        await proc.wait()
    outcome = Outcome(backend, soak.done, soak.failed, soak.events_seen, samples, args.seconds)
    if args.keep_bytes:
        outcome.kept_within = bool(kept.samples) and kept.max <= args.keep_bytes
        print(
            f"kept rendered rounds: at most {kept.max} bytes in {kept.samples} samples,"
            f" bound {args.keep_bytes} ({'within' if outcome.kept_within else 'EXCEEDED'});"
            f" {kept.last} at the end"
        )
    print(outcome.report(), flush=True)
    return outcome


def run_all(args: argparse.Namespace) -> int:
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = sorted(set(backends) - set(BACKENDS))
    if unknown or not backends:
        raise SystemExit(
            f"soak: --backends takes {', '.join(BACKENDS)}, not {', '.join(unknown) or 'nothing'}"
        )
    outcomes = []
    for backend in backends:
        if backend == "sqlite":
            outcomes.append(asyncio.run(run(args, backend, "")))
        elif args.database_url:
            outcomes.append(asyncio.run(run(args, backend, args.database_url)))
        else:
            with postgres_cluster() as url:
                outcomes.append(asyncio.run(run(args, backend, url)))
    print("summary:")
    for outcome in outcomes:
        print("  " + outcome.report())
    return 0 if all(o.flat and o.kept_within and not o.failures for o in outcomes) else 1


class KeptBytes:
    """The total bytes of kept rendered rounds, sampled from the server's database while it runs."""

    QUERY = "SELECT coalesce(sum(kept_bytes), 0) FROM rendered_rounds"

    def __init__(self, home: Path, database_url: str) -> None:
        self.home = home
        self.database_url = database_url.replace("postgresql+asyncpg", "postgresql")
        self.last: int | None = None
        self.max = 0
        self.samples = 0

    async def sample(self, stop: asyncio.Event, every: float = 0.5) -> None:
        conn = await asyncpg.connect(self.database_url) if self.database_url else None
        try:
            while True:
                self.last = await self._read(conn)
                if self.last is not None:
                    self.max = max(self.max, self.last)
                    self.samples += 1
                if stop.is_set():
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), every)
        finally:
            if conn is not None:
                await conn.close()

    async def _read(self, conn: asyncpg.Connection | None) -> int | None:
        """None before the table exists."""
        if conn is not None:
            try:
                return int(await conn.fetchval(self.QUERY))
            except asyncpg.UndefinedTableError:
                return None
        try:
            with contextlib.closing(
                sqlite3.connect(f"file:{self.home / 'pioneer.db'}?mode=ro", uri=True)
            ) as db:
                return int(db.execute(self.QUERY).fetchone()[0])
        except sqlite3.Error:
            return None


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_SECONDS", 1800)))
    parser.add_argument("--rate", type=float, default=10.0, help="rounds per second")
    parser.add_argument("--watchers", type=int, default=100)
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--every", type=float, default=30.0, help="seconds between RSS lines")
    parser.add_argument(
        "--backends",
        default=os.environ.get("SOAK_BACKENDS", ",".join(BACKENDS)),
        help="comma-separated: sqlite, postgres (default both, one after the other)",
    )
    parser.add_argument(
        "--database-url", default="", help="PostgreSQL to use instead of a cluster of its own"
    )
    parser.add_argument(
        "--keep-bytes", type=int, default=0, help="keep rendered rounds within this many bytes (default: off)"
    )
    parser.add_argument(
        "--probe", default="", help="run the server under scripts/memory_probe.py, logging to this file"
    )
    return run_all(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
