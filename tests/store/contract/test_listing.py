"""Listing: pages of threads, a thread's turns and its entries; kept rendered rounds and their bounds."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pioneer_grpc.errors import NotFound
from pioneer_grpc.store.clock import now
from pioneer_grpc.store.port import RenderedBounds, Store
from tests.store.contract.rows import answer, batch, config, manifest, turn, user


async def test_threads_page_by_id_and_newest_first(store: Store) -> None:
    for name in ("c", "a", "b"):
        await store.threads.create(name, config())
    page, more = await store.listing.threads(None, 2)
    assert [t.thread_id for t in page] == ["a", "b"] and more
    page, more = await store.listing.threads(("b", "default"), 2)
    assert [t.thread_id for t in page] == ["c"] and not more
    newest, more = await store.listing.threads_by_time("created", None, 2)
    assert [t.thread_id for t in newest] == ["b", "a"] and more
    last = newest[-1]
    rest, more = await store.listing.threads_by_time(
        "created", (last.create_time.ToDatetime().replace(tzinfo=_utc()), last.thread_id, last.tenant), 2
    )
    assert [t.thread_id for t in rest] == ["c"] and not more


async def test_turns_and_entries_page_in_their_order(store: Store) -> None:
    await store.threads.create("t", config())
    await turn(store, "t", "u1", user("q1", "u1"), answer("a1", "u1"))
    await store.entries.append(batch("t", user("q2", "u2")))
    recorded = await store.manifests.record(manifest("t", "u2"))
    turns, more = await store.listing.turns("t", None, 10)
    assert [(t.turn_id, t.entry_count, t.status) for t in turns] == [("u1", 2, 2), ("u2", 1, 1)] and not more
    assert turns[1].manifest_event_id == recorded.event_id and turns[0].manifest_event_id == 0
    first, more = await store.listing.turns("t", None, 1)
    assert more
    after = (first[0].create_time.ToDatetime().replace(tzinfo=_utc()), first[0].turn_id)
    assert [t.turn_id for t in (await store.listing.turns("t", after, 1))[0]] == ["u2"]
    entries, more = await store.listing.entries("t", "", 0, 2)
    assert [e.entry_id for e in entries] == ["q1", "a1"] and more and entries[0].completed
    rest, more = await store.listing.entries("t", "", entries[-1].sequence, 2)
    assert [e.entry_id for e in rest] == ["q2"] and not more and not rest[0].completed
    only, _ = await store.listing.entries("t", "u1", 0, 10)
    assert [e.entry_id for e in only] == ["q1", "a1"]
    with pytest.raises(NotFound):
        await store.listing.turns("nope", None, 10)
    with pytest.raises(NotFound):
        await store.listing.entries("nope", "", 0, 10)


async def test_kept_rounds_are_numbered_per_turn_and_bounded(store: Store) -> None:
    moment = now()
    bounds = RenderedBounds(rounds_per_thread=3, total_bytes=100, max_age=timedelta(hours=1))
    for n in range(4):
        await store.rendered.keep("t", "u1", n + 1, b"x" * 10, moment, bounds)
    kept = await store.rendered.turn_rounds("t", "u1", moment - timedelta(minutes=1))
    assert [k.round for k in kept] == [2, 3, 4]  # three per thread
    await store.rendered.keep("t2", "u1", 9, b"y" * 95, moment, bounds)
    assert await store.rendered.turn_rounds("t", "u1", moment - timedelta(minutes=1)) == []  # bytes
    assert [len(k.round_pb) for k in await store.rendered.turn_rounds("t2", "u1", moment)] == [95]
    later = moment + timedelta(hours=2)
    await store.rendered.keep("t3", "u1", 10, b"z", later, bounds)
    assert await store.rendered.turn_rounds("t2", "u1", moment) == []  # too old
    assert [k.round for k in await store.rendered.turn_rounds("t3", "u1", later)] == [1]


def _utc():  # type: ignore[no-untyped-def]
    from datetime import UTC

    return UTC
