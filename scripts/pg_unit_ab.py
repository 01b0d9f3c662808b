"""Two ways of one PostgreSQL unit of work, interleaved call by call (docs/postgres-statements.md).

    .venv/bin/python scripts/pg_unit_ab.py notice|lz4|begin|complete [--calls N] [--pg-url URL]

On a shared machine the loop's p50s move by more than a round trip between runs;
interleaving the two ways call by call gives both the same machine. Each prints
the p50 of each way, ms.

- notice: a manifest record as the store makes it (the event id from the COMMIT's
  NOTICE) and the same plus the session setting read after the COMMIT, as before
  migration 0012.
- lz4: the agent loop's manifest recorded into a database whose long columns
  compress with pglz (as before migration 0013) and into one with lz4.
- begin: raw asyncpg, the thread lock in a transaction: BEGIN, the prepared lock,
  COMMIT; the lock in the BEGIN's text (its key as hex digits); `EXECUTE` of a
  statement prepared on the session in the BEGIN's text.
- complete: CompleteTurn carrying the answer to a turn of three entries (the user's message, a
  tool call, its result: the agent loop's turn before its answer), as a unit of work
  through the store's runner: the turn completed by the append's lock statement, and the lock
  statement, then the completion's own (as before the first did both).

--pg-url (or $PIONEER_BENCH_PG_URL / $PIONEER_TEST_PG_URL) names a cluster where
scratch databases are created and dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import asyncpg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_events import scratch_database  # noqa: E402
from sqlalchemy import text  # noqa: E402
from sqlalchemy.util import await_only  # noqa: E402

from pioneer_grpc.events.recorder import ManifestRecorder  # noqa: E402
from pioneer_grpc.store import append, completion, round  # noqa: E402
from pioneer_grpc.store.engine import create_engine  # noqa: E402
from pioneer_grpc.store.entries import NewEntry  # noqa: E402
from pioneer_grpc.store.migrate import migrate  # noqa: E402
from pioneer_grpc.store.runner import OnLoop, TransactionRunner, nothing  # noqa: E402
from pioneer_grpc.store.threads import ThreadSettings, create_thread_in  # noqa: E402
from pioneer_grpc.v1 import common_pb2, history_pb2, prompt_pb2  # noqa: E402

Call = Callable[[int], Awaitable[Any]]
_LZ4 = importlib.import_module("pioneer_grpc.store.migrations.versions.0013_lz4_compression")


def _loop_manifest() -> prompt_pb2.PromptManifest:
    """A manifest of the agent loop's size: its sections' fingerprints, about 4 kB encoded."""
    sections = [f"section_{n:03d}" for n in range(40)]
    return prompt_pb2.PromptManifest(
        compiler_version="0.1.0",
        profile=prompt_pb2.PROMPT_PROFILE_FULL,
        section_ids=sections,
        fingerprint_stable="a" * 64,
        fingerprint_dynamic="b" * 64,
        fingerprint_full="c" * 64,
        section_fingerprints=[
            prompt_pb2.SectionFingerprint(section_id=s, stability=1, fingerprint=f"{n:064x}", chars=100 + n)
            for n, s in enumerate(sections)
        ],
    )


class _SettingReadAfterCommit(TransactionRunner):
    """The runner as it was before migration 0012: the setting read after the COMMIT, one round trip."""

    def _transaction(self, work: Any, prepared: Any, setting_of: Any, then: Any, on_loop: OnLoop[Any]) -> Any:
        value = None
        with self._engine.sync_engine.connect() as conn:
            with conn.begin():
                result = work(conn, prepared)
            setting = setting_of(result) if callable(setting_of) else setting_of
            if setting:
                driver: Any = conn.connection.driver_connection
                value = await_only(driver.fetchval("SELECT current_setting($1, true)", setting))
        return result, value


async def _interleaved(ways: dict[str, Call], calls: int) -> None:
    for n in range(50):
        for way in ways.values():
            await way(-1 - n)
    times: dict[str, list[float]] = {name: [] for name in ways}
    order = list(ways.items())
    for n in range(calls):
        for name, way in order if n % 2 else order[::-1]:
            began = time.perf_counter()
            await way(n)
            times[name].append(time.perf_counter() - began)
    print("  ".join(f"{name}: p50 {statistics.median(t) * 1000:.3f} ms" for name, t in times.items()))


async def _engine(stack: AsyncExitStack, admin_url: str) -> Any:
    url = await stack.enter_async_context(scratch_database(admin_url))
    engine = create_engine(url)
    stack.push_async_callback(engine.dispose)
    await migrate(engine)
    return engine


async def notice(admin_url: str, calls: int) -> None:
    async with AsyncExitStack() as stack:
        engine = await _engine(stack, admin_url)
        manifest = _loop_manifest()
        new = ManifestRecorder(TransactionRunner(engine), True)
        old = ManifestRecorder(_SettingReadAfterCommit(engine), True)
        await _interleaved(
            {
                "setting read after COMMIT": lambda n: old.record("t", f"old-{n}", manifest),
                "id in the COMMIT's NOTICE": lambda n: new.record("t", f"new-{n}", manifest),
            },
            calls,
        )


async def lz4(admin_url: str, calls: int) -> None:
    async with AsyncExitStack() as stack:
        manifest = _loop_manifest()
        ways: dict[str, Call] = {}
        for method in ("pglz", "lz4"):
            engine = await _engine(stack, admin_url)
            async with engine.begin() as conn:
                for table, columns in _LZ4.COLUMNS.items():
                    changes = ", ".join(f"ALTER COLUMN {c} SET COMPRESSION {method}" for c in columns)
                    await conn.execute(text(f"ALTER TABLE {table} {changes}"))
            recorder = ManifestRecorder(TransactionRunner(engine), True)
            ways[method] = lambda n, recorder=recorder: recorder.record("t", f"turn-{n}", manifest)
        await _interleaved(ways, calls)


async def begin(admin_url: str, calls: int) -> None:
    async with AsyncExitStack() as stack:
        url = await stack.enter_async_context(scratch_database(admin_url))
        driver = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
        stack.push_async_callback(driver.close)
        await driver.execute("CREATE TABLE threads (thread_id varchar(200) PRIMARY KEY, model varchar(200))")
        await driver.execute("INSERT INTO threads VALUES ('thread-1', 'gpt-4o-mini')")
        await driver.execute(
            "PREPARE lock_thread(varchar) AS SELECT FROM threads WHERE thread_id = $1 FOR UPDATE"
        )
        key = f"convert_from(decode('{b'thread-1'.hex()}', 'hex'), 'UTF8')"
        lock = "SELECT model FROM threads WHERE thread_id = $1 FOR UPDATE"

        async def separate(_n: int) -> None:
            await driver.execute("BEGIN")
            await driver.fetch(lock, "thread-1")
            await driver.execute("COMMIT")

        async def in_text(_n: int) -> None:
            await driver.execute(f"BEGIN; SELECT FROM threads WHERE thread_id = {key} FOR UPDATE")
            await driver.execute("COMMIT")

        async def executed(_n: int) -> None:
            await driver.execute(f"BEGIN; EXECUTE lock_thread({key})")
            await driver.execute("COMMIT")

        await _interleaved(
            {"BEGIN, lock, COMMIT": separate, "lock in BEGIN's text": in_text, "EXECUTE in it": executed},
            calls,
        )


def _appended(
    conn: Any, turn_id: str, entries: list[history_pb2.ConversationEntry], complete: bool | None
) -> int | None:
    """`_append_in`'s steps for one turn's entries counted for the thread's model; unless
    `complete` is None, the turn completed as CompleteTurn completes it, by the lock's statement
    (`complete`) or by the completion's after the append."""
    new = [NewEntry(entry, f"h-{entry.entry_id}", 20) for entry in entries]
    batch = append.batch_of("t", new, "cl100k_base")
    _, turn, inserted = round.lock_thread_and_turn(
        conn, "t", turn_id, [], batch, "m", complete=bool(complete)
    )
    append.append_rows(
        conn, "t", {turn_id: turn.record}, batch, lambda _: None, {turn_id: turn.entries}, {}, inserted
    )
    if complete is None or turn.completed is not None:
        return turn.completed
    return completion.completed_in_one(conn, "t", turn_id)


async def complete(admin_url: str, calls: int) -> None:
    async with AsyncExitStack() as stack:
        engine = await _engine(stack, admin_url)
        runner = TransactionRunner(engine)
        async with engine.begin() as conn:
            await conn.run_sync(lambda c: create_thread_in(c, "t", ThreadSettings(128_000, 4_000, "m")))

        def entry(
            entry_id: str, turn_id: str, role: int, text: str, **fields: Any
        ) -> history_pb2.ConversationEntry:
            return history_pb2.ConversationEntry(
                entry_id=entry_id, turn_id=turn_id, role=role, content=text, **fields
            )

        user, assistant, tool = (
            history_pb2.ENTRY_ROLE_USER,
            history_pb2.ENTRY_ROLE_ASSISTANT,
            history_pb2.ENTRY_ROLE_TOOL,
        )
        ways = {"lock, then completion": False, "completed by the lock": True}
        for name in ways:  # each turn as the loop leaves it before CompleteTurn: three entries
            for n in range(-50, calls):
                turn = f"{name}-{n}"
                call = common_pb2.ToolCall(
                    id=f"{turn}-c", name="read_file", arguments='{"path": "notes.txt"}'
                )
                held = [
                    entry(f"{turn}-u", turn, user, "read the notes " * 20),
                    entry(f"{turn}-t", turn, assistant, "", tool_calls=[call]),
                    entry(f"{turn}-r", turn, tool, "x" * 2000, tool_call_id=call.id, name="read_file"),
                ]
                async with engine.begin() as conn:
                    await conn.run_sync(lambda c, t=turn, h=held: _appended(c, t, h, None))

        def call(name: str, completing: bool) -> Call:
            async def completed(n: int) -> Any:
                turn = f"{name}-{n}"
                answer = [entry(f"{turn}-a", turn, assistant, "the notes say so " * 30)]
                return await runner.transact(
                    nothing, lambda conn, _: _appended(conn, turn, answer, completing)
                )

            return completed

        await _interleaved({name: call(name, completing) for name, completing in ways.items()}, calls)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=("notice", "lz4", "begin", "complete"))
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument(
        "--pg-url",
        default=os.environ.get("PIONEER_BENCH_PG_URL") or os.environ.get("PIONEER_TEST_PG_URL", ""),
    )
    args = parser.parse_args()
    if not args.pg_url:
        sys.exit("give --pg-url (or set PIONEER_BENCH_PG_URL): a PostgreSQL cluster for scratch databases")
    asyncio.run(
        {"notice": notice, "lz4": lz4, "begin": begin, "complete": complete}[args.what](
            args.pg_url, args.calls
        )
    )


if __name__ == "__main__":
    main()
