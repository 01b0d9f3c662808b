"""Where the server's time goes in the agent loop: each step of its units of work, timed in process.

    .venv/bin/python scripts/measure_loop_steps.py [--loops N] [--turns N] [-- serve flags...]

Starts the server inside this process (the `serve` command, an ephemeral port, a scratch home),
drives it with `clients/go/bin/pioneer-load -rpc loop` (the loop `make bench` measures, with the
provider body; `make go-load` builds it), and prints, after 10 unmeasured turns per loop, the p50
and the sum of each timed step: each RPC's handler, each unit of work's prepare, work, `then` and
`beside`, each COMMIT by the unit before it, the waits of hops into worker threads and the SQLite
thread's two hops per unit (submitted -> its batch starts, answer posted -> caller resumes), and every SQL
statement through the async engine or straight on asyncpg (PostgreSQL's, by its first words; a
unit's first statement on asyncpg includes its BEGIN); for each synchronous step also the p50 of
the CPU time its thread spent in it (`cpu p50`), which other processes' load on the machine does
not stretch as it stretches the wall time. Flags after `--` go to
`serve` (e.g. `--database-url URL`; PIONEER_SQLITE_SYNCHRONOUS=NORMAL in the environment). A
measuring tool: its wrappers cost time themselves, so compare its figures with each other, not
with the benchmark's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import functools
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_inputs import loop_inputs  # noqa: E402
from sqlalchemy import event  # noqa: E402
from sqlalchemy.engine import base as engine_base  # noqa: E402

import pioneer_grpc.store.engine as store_engine  # noqa: E402
from pioneer_grpc.server.servicers import history as history_servicer  # noqa: E402
from pioneer_grpc.server.servicers import turn as turn_servicer  # noqa: E402
from pioneer_grpc.store import batches as store_batches  # noqa: E402
from pioneer_grpc.store import driver  # noqa: E402
from pioneer_grpc.store import runner as store_runner  # noqa: E402

TIMES: defaultdict[str, list[float]] = defaultdict(list)
# The CPU time of the calling thread in each synchronous step (time.thread_time): unlike the wall
# time, it does not grow while the thread waits for a core other processes hold.
CPU: defaultdict[str, list[float]] = defaultdict(list)


def timed(key: str, fn: Any) -> Any:
    if asyncio.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def awaited(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                TIMES[key].append(time.perf_counter() - began)

        return awaited

    @functools.wraps(fn)
    def called(*args: Any, **kwargs: Any) -> Any:
        began, began_cpu = time.perf_counter(), time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            TIMES[key].append(time.perf_counter() - began)
            CPU[key].append(time.thread_time() - began_cpu)

    return called


LAST_UNIT = threading.local()
# The future of the SQLite unit the current task submitted last (its hops are stamped on it).
LAST_FUTURE: contextvars.ContextVar[Any] = contextvars.ContextVar("last_future", default=None)
# The name of the work `TransactionRunner.alone` was given, for the unit it runs on SQLite.
ALONE_WORK: contextvars.ContextVar[str] = contextvars.ContextVar("alone_work", default="")


def instrument() -> None:
    for cls, names in (
        (turn_servicer.TurnServicer, ["PrepareTurn"]),
        (history_servicer.HistoryServicer, ["AppendEntries", "CompleteTurn", "LoadConversationHistory"]),
    ):
        for name in names:
            setattr(cls, name, timed(f"rpc {name}", getattr(cls, name)))
    _units_timed()
    _hops_timed()
    _sqlite_hops_timed()
    _statements_timed()


def _units_timed() -> None:
    """Each unit of work's steps by the name of its work function; each COMMIT by the last unit
    that ran before it in its thread (with one loop, a SQLite batch is one unit)."""
    transact, alone = store_runner.TransactionRunner.transact, store_runner.TransactionRunner.alone

    async def named_alone(self: Any, work: Any) -> Any:
        token = ALONE_WORK.set(getattr(getattr(work, "func", work), "__name__", "?"))
        try:
            return await alone(self, work)
        finally:
            ALONE_WORK.reset(token)

    async def named_transact(self: Any, prepare: Any, work: Any, *args: Any, **kwargs: Any) -> Any:
        name = ALONE_WORK.get() or getattr(getattr(work, "func", work), "__name__", "?")
        for step in ("then", "beside"):
            if kwargs.get(step) is not None:
                kwargs[step] = timed(f"unit {name}: {step}", kwargs[step])
        if prepare is not store_runner.nothing:
            prepare = timed(f"unit {name}: prepare", prepare)
        timed_work = timed(f"unit {name}: work", work)

        def named_work(*work_args: Any) -> Any:
            LAST_UNIT.name = name
            return timed_work(*work_args)

        whole = timed(f"unit {name}: whole, awaited", transact)
        LAST_FUTURE.set(None)
        try:
            return await whole(self, prepare, named_work, *args, **kwargs)
        finally:
            posted = getattr(LAST_FUTURE.get(), "posted", None)
            if posted is not None:
                TIMES["SQLite hop: answer posted -> caller resumes"].append(time.perf_counter() - posted)

    store_runner.TransactionRunner.transact = named_transact  # type: ignore[method-assign]
    store_runner.TransactionRunner.alone = named_alone  # type: ignore[method-assign]
    commit = engine_base.RootTransaction._do_commit

    def named_commit(self: Any) -> None:
        began, began_cpu = time.perf_counter(), time.thread_time()
        try:
            commit(self)
        finally:
            key = f"COMMIT after unit {getattr(LAST_UNIT, 'name', '?')}"
            TIMES[key].append(time.perf_counter() - began)
            CPU[key].append(time.thread_time() - began_cpu)

    engine_base.RootTransaction._do_commit = named_commit  # type: ignore[method-assign]


def _hops_timed() -> None:
    to_thread = asyncio.to_thread

    async def timed_hop(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        queued = time.perf_counter()
        began: list[float] = []

        def run() -> Any:
            began.append(time.perf_counter())
            return fn(*args, **kwargs)

        result = await to_thread(run)
        TIMES["asyncio.to_thread: wait to start"].append(began[0] - queued)
        return result

    asyncio.to_thread = timed_hop


def _sqlite_hops_timed() -> None:
    """The SQLite thread's two hops: a unit submitted on the event loop until its batch starts in
    the thread; its answer posted back until its caller resumes."""
    submit, run, post = store_batches.Batches.submit, store_batches.Batches._run, store_batches._post

    def stamped_submit(self: Any, *args: Any) -> Any:
        future = submit(self, *args)
        future.submitted = time.perf_counter()
        LAST_FUTURE.set(future)
        return future

    def stamped_run(self: Any, batch: list[Any]) -> None:
        began = time.perf_counter()
        for unit in batch:
            # The thread may start the batch before `stamped_submit` stamped its future.
            submitted = getattr(unit.future, "submitted", began)
            TIMES["SQLite hop: submitted -> its batch starts"].append(began - submitted)
        run(self, batch)

    def stamped_post(units: list[Any]) -> None:
        posted = time.perf_counter()
        for unit in units:
            unit.future.posted = posted
        post(units)

    store_batches.Batches.submit = stamped_submit  # type: ignore[method-assign]
    store_batches.Batches._run = stamped_run  # type: ignore[method-assign]
    store_batches._post = stamped_post


def _statements_timed() -> None:
    """Statements through the async engine (PostgreSQL's; SQLite's units run on their own thread's
    connection and are timed as units)."""
    create_engine = store_engine.create_engine

    def statements_timed(*args: Any, **kwargs: Any) -> Any:
        engine = create_engine(*args, **kwargs)

        @event.listens_for(engine.sync_engine, "before_cursor_execute")
        def _before(conn: Any, *_: Any) -> None:
            conn.info["began"] = time.perf_counter()

        @event.listens_for(engine.sync_engine, "after_cursor_execute")
        def _after(conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            began = conn.info.pop("began", None)
            if began is not None:
                TIMES["sql " + " ".join(statement.split())[:70]].append(time.perf_counter() - began)

        return engine

    store_engine.create_engine = statements_timed

    # Statements `Direct` runs straight on asyncpg, by the same first words.
    on_asyncpg = driver._on_asyncpg

    def direct_timed(conn: Any, adapted: Any, compiled: Any, params: Any) -> Any:
        began = time.perf_counter()
        try:
            return on_asyncpg(conn, adapted, compiled, params)
        finally:
            TIMES["sql " + " ".join(compiled.sql.split())[:70]].append(time.perf_counter() - began)

    driver._on_asyncpg = direct_timed


def report() -> None:
    rows = sorted(TIMES.items(), key=lambda item: -sum(item[1]))
    print(f"{'step':<70} {'calls':>6} {'p50 ms':>8} {'sum ms':>9} {'cpu p50':>8}")
    for key, values in rows:
        p50, total = statistics.median(values) * 1000, sum(values) * 1000
        cpu = f"{statistics.median(CPU[key]) * 1000:>8.3f}" if CPU.get(key) else f"{'':>8}"
        print(f"{key[:70]:<70} {len(values):>6} {p50:>8.3f} {total:>9.1f} {cpu}")


def drive(port: int, request_file: Path, loops: int, turns: int, done: dict[str, Any]) -> None:
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), 0.1).close()
            break
        except OSError:
            time.sleep(0.1)
    args = [
        str(ROOT / "clients/go/bin/pioneer-load"),
        *("-addr", f"127.0.0.1:{port}", "-rpc", "loop", "-concurrency", str(loops)),
        *("-seed-entries", "200", "-input", str(request_file), "-provider", "openai-chat"),
    ]
    try:
        subprocess.run([*args, "-requests", "10"], capture_output=True, text=True, timeout=600, check=True)
        TIMES.clear()
        CPU.clear()
        before = resource.getrusage(resource.RUSAGE_SELF)
        measured = subprocess.run(
            [*args, "-requests", str(turns)], capture_output=True, text=True, timeout=600, check=True
        )
        done["rusage"] = (before, resource.getrusage(resource.RUSAGE_SELF))
        done["loop"] = json.loads(measured.stdout.strip().splitlines()[-1])
    finally:
        os.kill(os.getpid(), signal.SIGTERM)


def server_cpu(before: Any, after: Any, *, loops: int, turns: int) -> str:
    """The server process's CPU over the measured turns (every thread; not the load client's) per
    turn of the loop, its context switches and its page faults per turn: steadier than p50s on a
    busy machine."""
    per = 1000.0 / (loops * turns)
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    waits, preempted = after.ru_nvcsw - before.ru_nvcsw, after.ru_nivcsw - before.ru_nivcsw
    cpu = f"{(user + system) * per:.3f} ms (user {user * per:.3f}, sys {system * per:.3f})"
    switches = f"{waits * per / 1000:.1f} voluntary, {preempted * per / 1000:.1f} involuntary"
    faults = (after.ru_minflt - before.ru_minflt) * per / 1000
    per_turn = f"context switches per turn: {switches}; page faults per turn: {faults:.0f}"
    return f"server CPU per turn: {cpu}; {per_turn}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--loops", type=int, default=1)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("serve", nargs="*", help="flags for `serve`, after --")
    args = parser.parse_args()
    instrument()
    from pioneer_grpc.cli import main as cli_main

    with tempfile.TemporaryDirectory(prefix="pioneer-steps-") as tmp:
        home, request_file = loop_inputs(Path(tmp))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        done: dict[str, Any] = {}
        driver = (port, request_file, args.loops, args.turns, done)
        threading.Thread(target=drive, args=driver, daemon=True).start()
        sys.argv = [
            "pioneer-grpc", "serve", "--listen", f"127.0.0.1:{port}", "--home", str(home),
            "--log-level", "WARNING", "--grace-seconds", "0.5", *args.serve,
        ]  # fmt: skip
        try:
            cli_main()
        except SystemExit:
            pass
        loop = done.get("loop")
        if loop is None:
            sys.exit("the loop did not run to its end")
        steps = ("first_prepare", "inside_prepare", "complete_turn", "whole_turn")
        p50s = {step: loop[step]["p50_ms"] for step in steps}
        print(json.dumps(p50s), "(the loop's p50s, ms)")
        print(server_cpu(*done["rusage"], loops=args.loops, turns=args.turns))
        report()


if __name__ == "__main__":
    main()
