"""A thread's timeline: its reported rounds oldest first, numbered, paged, breaks only on request,
with the entries a history break summarized, cleared or dropped and the round's history decision;
the same on SQLite, PostgreSQL and in memory."""

from __future__ import annotations

from datetime import UTC, datetime

from pioneer_grpc.models.registry import packaged_registry
from pioneer_grpc.store.engine import create_engine
from pioneer_grpc.store.memory import MemoryStore
from pioneer_grpc.store.port import RoundUsageRecord, Store
from pioneer_grpc.store.sql import open_store
from pioneer_grpc.v1 import history_pb2
from tests.store.contract.rows import config

H = history_pb2
CAUSES = [H.PREFIX_BREAK_CAUSE_SECTION, H.PREFIX_BREAK_CAUSE_SUMMARY, H.PREFIX_BREAK_CAUSE_CLEARING]


def usage(thread_id: str, number: int, cause: int = 0, entries: tuple[str, ...] = ()) -> RoundUsageRecord:
    return RoundUsageRecord(
        thread_id,
        f"turn-{number}",
        number,
        1,
        1,
        "claude-sonnet-4-5",
        1_000 + number,
        900,
        0,
        20,
        None,
        1_000 + number,
        900 if not cause else 0,
        0,
        0.001,
        0.002,
        cause,
        "identity" if cause == H.PREFIX_BREAK_CAUSE_SECTION else (entries[0] if entries else ""),
        500 if cause else 0,
        0,
        datetime(2026, 12, 1, 12, 0, number % 60, tzinfo=UTC),
        break_entry_ids=entries,
        break_entry_count=len(entries) * 10,
        history_decision=H.HISTORY_DECISION_SUMMARIZED if cause == H.PREFIX_BREAK_CAUSE_SUMMARY else 1,
    )


async def _seed(store: Store) -> None:
    await store.threads.create("long", config())
    await store.threads.create("other", config())
    for number in range(1, 31):
        cause = CAUSES[number % 3] if number % 5 == 0 else 0
        entries = ("e1", "e2") if cause in CAUSES[1:] else ()
        await store.usage.record(usage("long", number, cause, entries))
    await store.usage.record(usage("other", 1, H.PREFIX_BREAK_CAUSE_MODEL))


async def _check(store: Store) -> None:
    await _seed(store)
    found, rounds, breaks = await store.usage.timeline("long", 0, 1000, False)
    assert (rounds, breaks) == (30, 6)
    assert [number for number, _ in found] == list(range(1, 31))
    assert [r.turn_id for _, r in found] == [f"turn-{n}" for n in range(1, 31)]
    found, _, _ = await store.usage.timeline("long", 10, 1000, True)
    assert [(n, r.break_cause) for n, r in found] == [
        (15, CAUSES[0]),
        (20, CAUSES[2]),
        (25, CAUSES[1]),
        (30, CAUSES[0]),
    ]
    summary = found[2][1]
    assert (summary.break_entry_ids, summary.break_entry_count) == (("e1", "e2"), 20)
    assert summary.history_decision == H.HISTORY_DECISION_SUMMARIZED
    page, _, _ = await store.usage.timeline("long", 0, 4, False)
    assert [n for n, _ in page] == [1, 2, 3, 4]


async def test_the_timeline_on_each_database(database_url: str) -> None:
    store = open_store(create_engine(database_url), packaged_registry().tokenizer_of)
    try:
        await _check(store)
    finally:
        await store.close()


async def test_the_timeline_in_memory() -> None:
    await _check(MemoryStore(packaged_registry().tokenizer_of))
