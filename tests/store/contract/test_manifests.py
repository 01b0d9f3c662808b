"""Manifests: recorded on their turn as durable events, read back by turn, by id, and after an id."""

from __future__ import annotations

import pytest

from pioneer_grpc import reasons
from pioneer_grpc.errors import NotFound
from pioneer_grpc.history.budget import DEFAULT_MAX_CONTEXT_TOKENS
from pioneer_grpc.store.port import Store
from tests.store.contract.rows import config, manifest


async def test_a_manifest_on_a_new_thread_creates_the_thread_and_the_turn(store: Store) -> None:
    recorded = await store.manifests.record(manifest("t", "u1"))
    assert recorded.event is not None and recorded.event_id > 0
    thread = await store.threads.get("t")
    assert thread.config.max_context_tokens == DEFAULT_MAX_CONTEXT_TOKENS and thread.config.model == ""
    on_turn = await store.manifests.turn_manifest("t", "u1")
    assert on_turn.event_id == recorded.event_id
    assert on_turn.manifest.fingerprint_stable == "s1" and on_turn.manifest.turn_id == "u1"
    assert await store.manifests.event(recorded.event_id) == recorded.event


async def test_the_same_manifest_again_is_the_same_event(store: Store) -> None:
    first = await store.manifests.record(manifest("t", "u1"))
    again = await store.manifests.record(manifest("t", "u1"))
    assert (again.event_id, again.event) == (first.event_id, None)
    other = await store.manifests.record(manifest("t", "u1", "s2"))
    assert other.event is not None and other.event_id > first.event_id
    assert (await store.manifests.turn_manifest("t", "u1")).event_id == other.event_id


async def test_events_are_read_after_an_id_in_order_by_thread_and_page(store: Store) -> None:
    await store.threads.create("a", config())
    ids = []
    for n in range(5):
        ids.append((await store.manifests.record(manifest("a" if n % 2 == 0 else "b", f"u{n}"))).event_id)
    assert ids == sorted(ids)
    every = await store.manifests.events_after(0)
    assert [e.event_id for e in every] == ids
    assert [e.event_id for e in await store.manifests.events_after(ids[1], limit=2)] == ids[2:4]
    assert [e.turn_id for e in await store.manifests.events_after(0, thread_id="b")] == ["u1", "u3"]
    assert await store.manifests.newest_event_id() == ids[-1]
    assert every[0].create_time.seconds > 0


async def test_what_is_missing_is_named(store: Store) -> None:
    assert await store.manifests.newest_event_id() == 0
    with pytest.raises(NotFound) as no_event:
        await store.manifests.event(42)
    assert no_event.value.reason == reasons.MANIFEST_EVENT_NOT_FOUND
    with pytest.raises(NotFound) as no_thread:
        await store.manifests.turn_manifest("t", "u1")
    assert no_thread.value.reason == reasons.THREAD_NOT_FOUND
    await store.threads.create("t", config())
    with pytest.raises(NotFound) as no_turn:
        await store.manifests.turn_manifest("t", "u1")
    assert no_turn.value.reason == reasons.TURN_NOT_FOUND
    from tests.store.contract.rows import batch, user

    await store.entries.append(batch("t", user("e1", "u1")))
    with pytest.raises(NotFound) as no_manifest:
        await store.manifests.turn_manifest("t", "u1")
    assert no_manifest.value.reason == reasons.TURN_MANIFEST_NOT_FOUND
