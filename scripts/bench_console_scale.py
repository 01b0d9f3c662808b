"""`make bench` (console at scale): opening a long thread, and finding a thread among many.

    .venv/bin/python scripts/bench_console_scale.py [--backend sqlite|postgresql|both] [--threads 100000]

1. Opening a 1,000-turn thread: a `pioneer-grpc serve --http-listen` subprocess on a SQLite
   and on a PostgreSQL database seeded with 2,000 threads, one of them 1,000 turns long with 20
   prefix breaks (tests/web/seeded.py); Debian's Chromium (Playwright, a fresh profile each run) opens the
   console's link to the thread. Reported: the API requests the page sent, and the page's own time
   from the link's navigation to the first frame drawn after the timeline shows its 20 break marks
   and the turn list its 1,000 turns (median of 5 runs; read in the page, so it is not rounded up to
   Playwright's polls, which come 500 ms apart after the first 270 ms: `seen_ms_p50` is that coarser
   figure, the link to Playwright seeing the same).
2. ListThreads over `--threads` threads (default 100,000; a seventh of them with a prefix break in
   a reported round) on SQLite and PostgreSQL: a page of 50 by update time, per filter, p50 and p99
   over 50 calls after 5 unmeasured ones, through gRPC against the server. Goal: under 50 ms.

A benchmark, never a test's assertion: the figures depend on the machine.
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
from pathlib import Path
from typing import Any

import grpc
from sqlalchemy import text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_events import scratch_database  # noqa: E402
from bench_inputs import prepare_home  # noqa: E402
from bench_server import served  # noqa: E402

from pioneer_grpc.store.engine import create_engine  # noqa: E402
from pioneer_grpc.store.migrate import migrate  # noqa: E402
from pioneer_grpc.v1 import history_service_pb2, history_service_pb2_grpc  # noqa: E402
from tests.web.browser import browsers, chromium  # noqa: E402
from tests.web.seeded import LONG_THREAD, START, seed_console, seed_threads  # noqa: E402

RUNS = 5
CALLS = 50
WARMUP = 5
GOAL_MS = 50.0

# Run in the page before its own scripts: the time (from the navigation, performance.now()) of the
# first frame after the one in which the thread is open, so its layout and paint are counted.
OPEN_WATCH = """
(() => {
  const open = () =>
    document.querySelectorAll('[data-testid="timeline-break"]').length === %(breaks)d &&
    document.querySelectorAll('[data-testid="turn-item"]').length === %(turns)d;
  const poll = () => {
    if (open()) requestAnimationFrame(() => { window.__threadOpenMs = performance.now(); });
    else requestAnimationFrame(poll);
  };
  requestAnimationFrame(poll);
})();
"""


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _seeded(url: str, seed: Any) -> Any:
    engine = create_engine(url)
    try:
        await migrate(engine)
        found = await seed(engine)
        if engine.dialect.name == "postgresql":
            async with engine.begin() as conn:
                await conn.execute(text("ANALYZE"))
        return found
    finally:
        await engine.dispose()


async def _open_ms(page: Any) -> float:
    """The page's time to the thread open (OPEN_WATCH), read once Playwright has seen it open."""
    for _ in range(500):
        found = await page.evaluate("() => window.__threadOpenMs || 0")
        if found:
            return float(found)
        await asyncio.sleep(0.01)
    raise RuntimeError("the page never recorded the thread open")


async def open_thread_figure(url: str, backend: str, tmp: Path) -> dict[str, Any]:
    chromium()
    from playwright.async_api import expect

    home = tmp / f"open-home-{backend}"
    home.mkdir()
    prepare_home(home)
    started = time.perf_counter()
    seeded = await _seeded(url, seed_console)
    seeding_s = time.perf_counter() - started
    port = free_port()
    seconds: list[float] = []
    seen: list[float] = []
    requests: list[list[str]] = []
    async with served(home, "--database-url", url, "--http-listen", f"127.0.0.1:{port}"):
        async with browsers() as open_browser:
            for _ in range(RUNS):
                context = await open_browser()
                page = await context.new_page()
                await page.add_init_script(OPEN_WATCH % {"breaks": 20, "turns": seeded.turns})
                calls: list[str] = []
                page.on(
                    "request",
                    lambda r, calls=calls: (
                        calls.append(r.url.rsplit("/", 1)[-1]) if "/pioneer.v1." in r.url else None
                    ),
                )
                began = time.perf_counter()
                await page.goto(f"http://127.0.0.1:{port}/#thread={LONG_THREAD}")
                await expect(page.get_by_test_id("timeline-break")).to_have_count(20, timeout=60_000)
                await expect(page.get_by_test_id("turn-item")).to_have_count(seeded.turns, timeout=60_000)
                seen.append(time.perf_counter() - began)
                seconds.append(await _open_ms(page) / 1000)
                requests.append(sorted(calls))
                await context.close()
    return {
        "figure": f"console: open a 1,000-turn thread (2,000 threads, 20 breaks), {backend}",
        "threads": seeded.threads,
        "turns": seeded.turns,
        "seeding_s": round(seeding_s, 2),
        "runs": RUNS,
        "requests": len(requests[-1]),
        "requests_by_rpc": requests[-1],
        "open_ms_p50": round(1000 * statistics.median(seconds), 1),
        "open_ms_max": round(1000 * max(seconds), 1),
        "seen_ms_p50": round(1000 * statistics.median(seen), 1),
    }


def filters() -> dict[str, str]:
    later = START.replace(hour=START.hour + 6).isoformat().replace("+00:00", "Z")
    return {
        "none": "",
        "id substring, one match": "050000",
        "id substring, none": "no-such-thread",
        "id substring, many": "-gpt",
        "model": 'model = "gpt-4o"',
        "has cache breaks": "has_cache_breaks = true",
        "updated after": f'update_time > "{later}"',
        "model and breaks": 'model = "gpt-4o" AND has_cache_breaks = true',
    }


async def list_threads_figures(url: str, backend: str, count: int, tmp: Path) -> dict[str, Any]:
    home = tmp / f"list-home-{backend}"
    home.mkdir()
    prepare_home(home)
    started = time.perf_counter()
    await _seeded(url, lambda engine: seed_threads(engine, count))
    seeding_s = time.perf_counter() - started
    figures: dict[str, Any] = {
        "figure": f"console: ListThreads filtered, page of 50 by update time, {backend}",
        "threads": count,
        "seeding_s": round(seeding_s, 1),
        "goal_ms": GOAL_MS,
    }
    async with served(home, "--database-url", url) as (address, _):
        async with grpc.aio.insecure_channel(address) as channel:
            stub = history_service_pb2_grpc.HistoryServiceStub(channel)
            for name, text in filters().items():
                request = history_service_pb2.ListThreadsRequest(
                    page_size=50, order_by="update_time desc", filter=text
                )
                times = []
                found = 0
                for call in range(WARMUP + CALLS):
                    began = time.perf_counter()
                    answer = await stub.ListThreads(request)
                    if call >= WARMUP:
                        times.append(1000 * (time.perf_counter() - began))
                    found = len(answer.threads)
                times.sort()
                figures[name] = {
                    "p50_ms": round(statistics.median(times), 2),
                    "p99_ms": round(times[int(0.99 * (len(times) - 1))], 2),
                    "threads_in_page": found,
                }
    return figures


def lines(results: list[dict[str, Any]]) -> list[str]:
    out = []
    for result in results:
        if "open_ms_p50" in result:
            backend = result["figure"].rsplit(", ", 1)[-1]
            out.append(
                f"{backend:<10} open 1,000-turn thread  {result['requests']} requests,"
                f" {result['open_ms_p50']} ms p50 (max {result['open_ms_max']} ms over {result['runs']} runs;"
                f" seen by Playwright's polls {result['seen_ms_p50']} ms p50)"
            )
            continue
        backend = result["figure"].rsplit(", ", 1)[-1]
        for name in filters():
            figure = result[name]
            met = "met" if figure["p50_ms"] < GOAL_MS else "NOT met"
            p50, p99 = figure["p50_ms"], figure["p99_ms"]
            out.append(
                f"{backend:<10} ListThreads {name:<24} p50 {p50:>7} ms  p99 {p99:>7} ms"
                f"  goal < {GOAL_MS:g} ms {met}"
            )
    return out


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--threads", type=int, default=100_000)
    parser.add_argument("--skip-open", action="store_true", help="leave out the browser figure")
    args = parser.parse_args()
    from bench import start_postgres, stop_postgres

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pioneer-bench-console-scale-") as tmp_name:
        tmp = Path(tmp_name)
        if args.backend in ("sqlite", "both"):
            if not args.skip_open:
                url = f"sqlite+aiosqlite:///{tmp / 'console.db'}"
                results.append(await open_thread_figure(url, "sqlite", tmp))
                print(json.dumps(results[-1]), flush=True)
            url = f"sqlite+aiosqlite:///{tmp / 'threads.db'}"
            results.append(await list_threads_figures(url, "sqlite", args.threads, tmp))
            print(json.dumps(results[-1]), flush=True)
        if args.backend in ("postgresql", "both"):
            cluster = Path(tempfile.mkdtemp(prefix="pioneer-bench-pg-", dir="/tmp"))
            admin_url = os.environ.get("PIONEER_BENCH_PG_URL", "")
            try:
                admin_url = admin_url or await asyncio.to_thread(start_postgres, cluster)
                if not args.skip_open:
                    async with scratch_database(admin_url) as url:
                        results.append(await open_thread_figure(url, "postgresql", tmp))
                        print(json.dumps(results[-1]), flush=True)
                async with scratch_database(admin_url) as url:
                    results.append(await list_threads_figures(url, "postgresql", args.threads, tmp))
                    print(json.dumps(results[-1]), flush=True)
            finally:
                if not os.environ.get("PIONEER_BENCH_PG_URL"):
                    await asyncio.to_thread(stop_postgres, cluster)
    for line in lines(results):
        print(line)


if __name__ == "__main__":
    asyncio.run(main())
