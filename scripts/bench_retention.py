"""Retention's cost to serving: 16 agent loops' PrepareTurn p99 while the retention sweeper deletes
10,000 expired threads, against the same loops with the sweeper off (docs/performance.md).

    .venv/bin/python scripts/bench_retention.py [--backend sqlite|postgresql|both] [--threads 10000]
        [--turns 40]

The database is seeded with THREADS threads whose last write is 40 days old (each with a completed
turn of four entries, about 2 KB), then each run is a `pioneer-grpc serve` subprocess with
--retention-days 30 and the Go loop (clients/go/bin/pioneer-load -rpc loop, 16 loops, as
scripts/bench_loop.py runs it, TURNS measured turns each: about 1,300 PrepareTurns a run, so a p99
is not one or two calls): first with --retention-sweep-seconds 0 (no sweep: the expired threads
stay), then with the sweeper waking after 0.5 s, then without again (the machine's drift between
runs). While the sweeping run's loops run, the expired threads left are counted every 0.2 s: the
figure says how much of the loops' time the sweep overlapped. Goal: PrepareTurn p99 (first and
inside) with the sweep within 1.5x of the run without.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import bench_loop  # noqa: E402
from bench_events import scratch_database  # noqa: E402
from bench_inputs import loop_inputs  # noqa: E402
from bench_loop import run_loop  # noqa: E402
from bench_server import served  # noqa: E402
from sqlalchemy import func, insert, select  # noqa: E402

from pioneer_grpc.store.engine import create_engine  # noqa: E402
from pioneer_grpc.store.migrate import migrate  # noqa: E402
from pioneer_grpc.store.models import EntryRow, ThreadRow, TurnRow  # noqa: E402
from pioneer_grpc.v1 import history_pb2  # noqa: E402

GOAL = 1.5
SEED_BATCH = 500
OLD = timedelta(days=40)


def _rows(n: int, moment: datetime) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    thread_id = f"expired-{n:06d}"
    thread = {
        "thread_id": thread_id,
        "max_context_tokens": 128_000,
        "response_reserve_tokens": 16_000,
        "model": "claude-sonnet-4-5",
        "summary_model": "",
        "created_at": moment,
        "updated_at": moment,
        "completed_entries": 4,
    }
    entries = [
        {
            "thread_id": thread_id,
            "entry_id": f"e{i}",
            "turn_id": "u1",
            "role": history_pb2.ENTRY_ROLE_USER if i % 2 == 0 else history_pb2.ENTRY_ROLE_ASSISTANT,
            "content": f"message {i} of an old conversation " * 15,
            "tool_calls_json": "[]",
            "tool_call_id": "",
            "name": "",
            "artifact_refs_json": "[]",
            "content_hash": f"{n:032d}{i:032d}",
            "token_count": 90,
            "tokenizer": "o200k_base",
            "completed": True,
            "created_at": moment,
        }
        for i in range(4)
    ]
    turn = {
        "thread_id": thread_id,
        "turn_id": "u1",
        "status": history_pb2.TURN_STATUS_COMPLETED,
        "created_at": moment,
        "updated_at": moment,
    }
    return thread, entries, turn


async def seed(url: str, threads: int) -> None:
    engine = create_engine(url)
    try:
        await migrate(engine)
        moment = datetime.now(UTC) - OLD
        for start in range(0, threads, SEED_BATCH):
            rows = [_rows(n, moment) for n in range(start, min(threads, start + SEED_BATCH))]
            async with engine.begin() as conn:
                await conn.execute(insert(ThreadRow), [thread for thread, _, _ in rows])
                await conn.execute(insert(EntryRow), [e for _, entries, _ in rows for e in entries])
                await conn.execute(insert(TurnRow), [turn for _, _, turn in rows])
    finally:
        await engine.dispose()


async def expired_left(url: str) -> int:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            count = await conn.scalar(
                select(func.count()).select_from(ThreadRow).where(ThreadRow.thread_id.like("expired-%"))
            )
        return int(count or 0)
    finally:
        await engine.dispose()


async def measured(url: str, home: Path, request_file: Path, sweep_seconds: str) -> dict[str, Any]:
    """One run of 16 loops on a fresh server; with a sweep, how far it went while the loops ran."""
    extra = ["--database-url", url, "--retention-days", "30", "--retention-sweep-seconds", sweep_seconds]
    async with served(home, *extra) as (address, _):
        before = await expired_left(url)
        counts: list[tuple[float, int]] = []
        done = asyncio.Event()

        async def count() -> None:
            while not done.is_set():
                counts.append((time.monotonic(), await expired_left(url)))
                await asyncio.sleep(0.2)

        counter = asyncio.create_task(count())
        began = time.monotonic()
        result = await asyncio.to_thread(run_loop, address, 16, request_file)
        ended = time.monotonic()
        done.set()
        await counter
        after = await expired_left(url)
    sweeping = [moment for moment, left in counts if 0 < left < before]
    return {
        "first_prepare_p99_ms": result["first_prepare"]["p99_ms"],
        "inside_prepare_p99_ms": result["inside_prepare"]["p99_ms"],
        "first_prepare_p50_ms": result["first_prepare"]["p50_ms"],
        "inside_prepare_p50_ms": result["inside_prepare"]["p50_ms"],
        "loop_seconds": round(ended - began, 1),
        "expired_before": before,
        "expired_after": after,
        "deleted_during_loops": before - after,
        "sweep_seen_seconds": round(max(sweeping) - min(sweeping), 1) if len(sweeping) > 1 else 0.0,
        "errors": result["errors"],
    }


async def backend_figures(
    url: str, home: Path, request_file: Path, backend: str, threads: int
) -> dict[str, Any]:
    await seed(url, threads)
    without = await measured(url, home, request_file, "0")
    sweeping = await measured(url, home, request_file, "0.5")
    again = await measured(url, home, request_file, "0")
    # Against the mean of the runs without, before and after: the machine drifts between runs.
    base_first = (without["first_prepare_p99_ms"] + again["first_prepare_p99_ms"]) / 2
    base_inside = (without["inside_prepare_p99_ms"] + again["inside_prepare_p99_ms"]) / 2
    return {
        "figure": f"retention sweep of {threads} expired threads under 16 loops, {backend}",
        "without": without,
        "sweeping": sweeping,
        "without_again": again,
        "first_prepare_p99_vs_without": round(sweeping["first_prepare_p99_ms"] / base_first, 2),
        "inside_prepare_p99_vs_without": round(sweeping["inside_prepare_p99_ms"] / base_inside, 2),
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--threads", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=40, help="measured turns of each of the 16 loops")
    args = parser.parse_args()
    bench_loop.TURNS[16] = args.turns
    from bench import start_postgres, stop_postgres

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pioneer-bench-retention-") as tmp:
        home, request_file = loop_inputs(Path(tmp))
        if args.backend in ("sqlite", "both"):
            url = f"sqlite+aiosqlite:///{Path(tmp) / 'retention.db'}"
            results.append(await backend_figures(url, home, request_file, "sqlite", args.threads))
        if args.backend in ("postgresql", "both"):
            cluster = Path(tempfile.mkdtemp(prefix="pioneer-bench-pg-", dir="/tmp"))
            try:
                admin_url = os.environ.get("PIONEER_BENCH_PG_URL", "")
                admin_url = admin_url or await asyncio.to_thread(start_postgres, cluster)
                async with scratch_database(admin_url) as url:
                    results.append(await backend_figures(url, home, request_file, "postgresql", args.threads))
            finally:
                await asyncio.to_thread(stop_postgres, cluster)
    for result in results:
        print(json.dumps(result))
    for result in results:
        for key in ("first_prepare_p99_vs_without", "inside_prepare_p99_vs_without"):
            verdict = "ok" if result[key] <= GOAL else "MISSED"
            print(f"{result['figure']}: {key} {result[key]}x (goal <= {GOAL}x) {verdict}")


if __name__ == "__main__":
    asyncio.run(main())
