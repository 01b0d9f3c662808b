"""The cost of the way to and from SQLite's thread: process CPU and wall time per unit and per read.

    .venv/bin/python scripts/measure_sqlite_hops.py [--units N] [--synchronous FULL|NORMAL]

In process, on a scratch SQLite file: N units of work one after another through
`TransactionRunner.transact` (each one INSERT: BEGIN IMMEDIATE, the statement, COMMIT), then N
reads through `TransactionRunner.read` (no transaction), after 200 unmeasured units. Prints the
process's CPU time (every thread) and the wall time per unit and per read. With NORMAL (the
default here) the disk's flush does not swamp the path's own cost; compare runs of two versions
of the code back to back, not with other figures.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import text  # noqa: E402
from sqlalchemy.engine import Connection  # noqa: E402

from pioneer_grpc.store.engine import create_engine  # noqa: E402
from pioneer_grpc.store.runner import TransactionRunner  # noqa: E402

INSERT = text("INSERT INTO t VALUES (:x)")


def _insert(conn: Connection, _prepared: None) -> int:
    conn.execute(INSERT, {"x": 1})
    return 1


def _one(_conn: Connection) -> int:
    return 1


async def measure(units: int, synchronous: str) -> str:
    with tempfile.TemporaryDirectory(prefix="pioneer-hops-") as tmp:
        engine = create_engine(f"sqlite+aiosqlite:///{tmp}/hops.db", synchronous)
        runner = TransactionRunner(engine)
        try:
            create = text("CREATE TABLE t (x INTEGER)")
            await runner.transact(lambda: None, lambda conn, _: conn.execute(create))
            for _ in range(200):
                await runner.transact(lambda: None, _insert)
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(units):
                await runner.transact(lambda: None, _insert)
            unit_cpu, unit_wall = time.process_time() - cpu, time.perf_counter() - wall
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(units):
                await runner.read(_one)
            read_cpu, read_wall = time.process_time() - cpu, time.perf_counter() - wall
        finally:
            await runner.close()
            await engine.dispose()
    per = 1e6 / units
    return (
        f"unit: cpu {unit_cpu * per:.1f} us, wall {unit_wall * per:.1f} us; "
        f"read: cpu {read_cpu * per:.1f} us, wall {read_wall * per:.1f} us"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--units", type=int, default=3000)
    parser.add_argument("--synchronous", choices=("FULL", "NORMAL"), default="NORMAL")
    args = parser.parse_args()
    print(asyncio.run(measure(args.units, args.synchronous)))


if __name__ == "__main__":
    main()
