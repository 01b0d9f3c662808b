"""ListThreads' filter (AIP-160) and its order by update time: the same threads on SQLite,
PostgreSQL and in memory, and a filter it cannot read refused with a field violation."""

from __future__ import annotations

from datetime import UTC, timedelta

import pytest

from pioneer_grpc.models.registry import packaged_registry
from pioneer_grpc.service.thread_filter import parse, violation
from pioneer_grpc.store.engine import create_engine
from pioneer_grpc.store.memory import MemoryStore
from pioneer_grpc.store.port import Store
from pioneer_grpc.store.sql import open_store
from pioneer_grpc.v1 import history_pb2
from tests.store.contract.rows import config
from tests.store.test_timeline import usage

MODELS = ["claude-sonnet-4-5", "gpt-4o"]


async def _seed(store: Store) -> None:
    for i in range(12):
        await store.threads.create(f"{'pioneer' if i % 4 == 0 else 'other'}-{i:02d}", config(MODELS[i % 2]))
    await store.usage.record(usage("pioneer-04", 1, history_pb2.PREFIX_BREAK_CAUSE_SUMMARY, ("e1",)))
    await store.usage.record(usage("other-05", 1))  # a round whose prefix held


async def _ids(store: Store, text: str, size: int = 50) -> list[str]:
    threads, _ = await store.listing.threads_by_time(
        "updated", None, size, where=parse(text) if text else None
    )
    return [t.thread_id for t in threads]


async def _check(store: Store) -> None:
    await _seed(store)
    every = await _ids(store, "")
    assert len(every) == 12
    # Most recently updated first: the threads were made one after the other.
    assert every[0] == "other-11" and every[-1] == "pioneer-00"
    assert await _ids(store, "pioneer") == ["pioneer-08", "pioneer-04", "pioneer-00"]
    assert await _ids(store, 'thread_id:"oneer-0"') == ["pioneer-08", "pioneer-04", "pioneer-00"]
    assert await _ids(store, 'pioneer AND model = "claude-sonnet-4-5"') == [
        "pioneer-08",
        "pioneer-04",
        "pioneer-00",
    ]
    assert await _ids(store, 'model = "gpt-4o" other-0') == [
        "other-09",
        "other-07",
        "other-05",
        "other-03",
        "other-01",
    ]
    assert await _ids(store, "has_cache_breaks = true") == ["pioneer-04"]
    assert len(await _ids(store, "has_cache_breaks = false")) == 11
    assert await _ids(store, "100%_") == []  # LIKE's wildcards are taken literally
    newest = (await store.listing.threads_by_time("updated", None, 1))[0][0].update_time.ToDatetime(
        tzinfo=UTC
    )
    later = (newest + timedelta(seconds=1)).isoformat()
    assert await _ids(store, f'update_time > "{later}"') == []
    assert len(await _ids(store, f'update_time < "{later}" AND update_time >= "2000-01-01T00:00:00Z"')) == 12
    page, more = await store.listing.threads_by_time("updated", None, 2, where=parse("pioneer"))
    assert more and [t.thread_id for t in page] == ["pioneer-08", "pioneer-04"]
    last = page[-1]
    rest, more = await store.listing.threads_by_time(
        "updated",
        (last.update_time.ToDatetime(tzinfo=UTC), last.thread_id, last.tenant),
        2,
        where=parse("pioneer"),
    )
    assert not more and [t.thread_id for t in rest] == ["pioneer-00"]
    found, _ = await store.listing.threads_by_time(
        "created", None, 50, where=parse("has_cache_breaks = true")
    )
    assert [t.thread_id for t in found] == ["pioneer-04"]
    found, _ = await store.listing.threads(None, 50, where=parse('model = "gpt-4o" pioneer'))
    assert found == []
    # The substring reaches PostgreSQL as a literal in the statement (store/listing.py): quotes,
    # backslashes and SQL in it are matched as text, never read as SQL.
    for odd in ("it's", "back\\slash'", "x'; DROP TABLE threads; --"):
        await store.threads.create(odd, config())
    assert await _ids(store, '"it\'s"') == ["it's"]
    assert await _ids(store, 'thread_id:"\\\\slash\'"') == ["back\\slash'"]
    assert await _ids(store, '"DROP TABLE threads"') == ["x'; DROP TABLE threads; --"]
    assert len(await _ids(store, "")) == 15


async def test_the_filter_on_each_database(database_url: str) -> None:
    store = open_store(create_engine(database_url), packaged_registry().tokenizer_of)
    try:
        await _check(store)
    finally:
        await store.close()


async def test_the_filter_in_memory() -> None:
    await _check(MemoryStore(packaged_registry().tokenizer_of))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("title:x", "unknown field 'title'"),
        ("model : x", 'model takes "="'),
        ("has_cache_breaks = maybe", 'has_cache_breaks takes "= true" or "= false"'),
        ('update_time > "yesterday"', "update_time takes an RFC 3339 time"),
        ('update_time > "2026-12-01T00:00:00"', "needs a zone"),
        ("a OR b", "OR is not supported"),
        ("= x", "must follow a field name"),
        ("model =", "needs a value"),
        ('"unclosed', "cannot read the filter at character 1"),
        (" ".join(f"t{i}" for i in range(9)), "at most 8 terms"),
    ],
)
def test_a_filter_it_cannot_read_says_why(text: str, says: str) -> None:
    where, bad = violation(text)
    assert where is None and bad is not None
    assert bad.field == "filter" and says in bad.description


def test_an_empty_filter_is_every_thread() -> None:
    assert violation("  ") == (None, None)
    assert parse('thread_id:"a b" AND model = "m"').id_contains == ("a b",)
    assert parse("x").updated == () and parse("x").has_cache_breaks is None
