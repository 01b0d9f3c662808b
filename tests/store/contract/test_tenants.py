"""Tenants: two tenants' views of one store, each with a thread "t". Every method of one view finds
only its tenant's rows; another tenant's thread answers what a missing thread answers (the same
error, reason, message and details); only an admin's listing and events read across tenants."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest

from pioneer_grpc.errors import NotFound, PioneerError
from pioneer_grpc.store.clock import now
from pioneer_grpc.store.port import (
    AppendOutcome,
    HistoryAsk,
    Recorded,
    RenderedBounds,
    RoundAsk,
    RoundCommit,
    Store,
    SummaryToStore,
)
from tests.store.contract.rows import CL100K, answer, batch, config, counted, manifest, turn, user
from tests.store.contract.test_round_usage import _usage

BOUNDS = RenderedBounds(rounds_per_thread=5, total_bytes=10_000, max_age=timedelta(hours=1))


async def _answer(call: Callable[[], Awaitable[Any]]) -> tuple[str, str, str, dict[str, str]] | str:
    try:
        await call()
    except PioneerError as error:
        return type(error).__name__, error.reason, error.message, error.metadata
    return "answered"


async def _filled(store: Store) -> Recorded:
    """Thread "t" of `store`'s tenant: a completed turn, a round with its manifest, a summary, a kept
    round and a usage report."""
    await store.threads.create("t", config())
    await turn(store, "t", "u1", user("q1", "u1", "acme's question"), answer("a1", "u1"))
    opened = await store.rounds.open(RoundAsk("t", "u2", HistoryAsk("t", "u2")))
    commit = RoundCommit(
        "t", "u2", opened.version, None, manifest("t", "u2"), counted(user("q2", "u2")), CL100K
    )
    recorded = await store.rounds.commit(commit)
    assert isinstance(recorded, Recorded)
    summary = SummaryToStore("acme's summary", 3, CL100K, "a1", 2, "", "extractive")
    await store.history.store_summary("t", summary, "")
    await store.rendered.keep("t", "u2", recorded.event_id, b"acme's body", now(), BOUNDS)
    await store.usage.record(_usage(event=recorded.event_id))
    return recorded


async def test_each_tenant_sees_only_its_own_thread_of_one_id(store: Store) -> None:
    acme, other = store.of_tenant("acme"), store.of_tenant("globex")
    assert acme.tenant == "acme" and store.of_tenant("acme") is acme
    recorded = await _filled(acme)
    await other.threads.create("t", config(max_context_tokens=9000))

    mine, theirs = await acme.threads.get("t"), await other.threads.get("t")
    assert (mine.tenant, mine.config.max_context_tokens, mine.entry_count) == ("acme", 8000, 3)
    assert (theirs.tenant, theirs.config.max_context_tokens, theirs.entry_count) == ("globex", 9000, 0)
    read = await other.history.read(HistoryAsk("t"))
    assert read.whole is not None and read.whole.entries == [] and read.whole.summary is None
    assert await other.history.latest_summary("t") is None
    assert (await other.listing.turns("t", None, 10))[0] == []
    assert (await other.listing.entries("t", "", 0, 10))[0] == []
    assert await other.rendered.turn_rounds("t", "u2", now() - timedelta(hours=1)) == []
    assert await other.usage.thread_rounds("t", 10) == []
    assert await other.manifests.events_after(0) == []
    everything = await other.manifests.events_after(0, every_tenant=True)
    assert [(e.event_id, e.tenant) for e in everything] == [(recorded.event_id, "acme")]
    stored = await other.entries.stored_calls("t", [user("q1", "u1")])
    assert stored.turns == {} and stored.stored_entry_ids == set()
    # The same entry id in the other tenant's thread of the same id is a new entry.
    outcome = await other.entries.append(batch("t", user("q1", "u1", "globex's question")))
    assert isinstance(outcome, AppendOutcome) and outcome.created_count == 1

    # Listing: each tenant its own, an admin's listing both, each with its tenant.
    assert [(t.thread_id, t.tenant) for t in (await acme.listing.threads(None, 10))[0]] == [("t", "acme")]
    every, _ = await acme.listing.threads(None, 10, every_tenant=True)
    assert [(t.thread_id, t.tenant) for t in every] == [("t", "acme"), ("t", "globex")]
    first, more = await acme.listing.threads(None, 1, every_tenant=True)
    assert more and [(t.tenant) for t in first] == ["acme"]
    rest, more = await acme.listing.threads(("t", "acme"), 1, every_tenant=True)
    assert not more and [t.tenant for t in rest] == ["globex"]
    newest, _ = await acme.listing.threads_by_time("created", None, 10, every_tenant=True)
    assert {(t.thread_id, t.tenant) for t in newest} == {("t", "acme"), ("t", "globex")}

    # Deleting one tenant's thread leaves the other's whole.
    assert await other.threads.delete("t")
    assert (await acme.threads.get("t")).entry_count == 3
    assert [e.event_id for e in await acme.manifests.events_after(0)] == [recorded.event_id]


async def test_another_tenants_thread_answers_as_a_missing_one(store: Store) -> None:
    acme, other = store.of_tenant("acme"), store.of_tenant("globex")
    recorded = await _filled(acme)
    # "t" exists for acme only; "missing" exists for nobody. Every answer of "t" to globex is the
    # answer of "missing" with the id changed.
    calls: dict[str, Callable[[str], Awaitable[Any]]] = {
        "get": lambda thread: other.threads.get(thread),
        "update": lambda thread: other.threads.update(thread, config(), config()),
        "append": lambda thread: other.entries.append(batch(thread, user("q9", "u9"))),
        "complete": lambda thread: other.turns.complete(thread, "u1"),
        "abandon": lambda thread: other.turns.abandon(thread, "u2"),
        "read": lambda thread: other.history.read(HistoryAsk(thread)),
        "latest_summary": lambda thread: other.history.latest_summary(thread),
        "mark": lambda thread: other.history.mark_compaction_failed(thread, 1),
        "open": lambda thread: other.rounds.open(RoundAsk(thread, "u2", HistoryAsk(thread, "u2"))),
        "turn_manifest": lambda thread: other.manifests.turn_manifest(thread, "u2"),
        "turns": lambda thread: other.listing.turns(thread, None, 10),
        "entries": lambda thread: other.listing.entries(thread, "", 0, 10),
    }
    for name, call in calls.items():
        foreign = await _answer(lambda call=call: call("t"))  # type: ignore[misc]
        missing = await _answer(lambda call=call: call("missing"))  # type: ignore[misc]
        assert foreign == _renamed(missing), name
    assert await other.threads.delete("t") is None
    with pytest.raises(NotFound) as foreign_event:
        await other.manifests.event(recorded.event_id)
    with pytest.raises(NotFound) as missing_event:
        await other.manifests.event(recorded.event_id + 1000)
    assert foreign_event.value.reason == missing_event.value.reason
    assert (await other.manifests.event(recorded.event_id, every_tenant=True)).tenant == "acme"
    # A manifest recorded by globex on "t" makes globex's own thread, not a turn of acme's.
    await other.manifests.record(manifest("t", "u2", stable="g1"))
    assert (await acme.manifests.turn_manifest("t", "u2")).manifest.fingerprint_stable == "s1"
    assert (await other.threads.get("t")).tenant == "globex"


def _renamed(answer: Any) -> Any:
    if isinstance(answer, str):
        return answer
    kind, reason, message, metadata = answer
    metadata = {k: ("t" if v == "missing" else v) for k, v in metadata.items()}
    return kind, reason, message.replace("'missing'", "'t'"), metadata


async def test_a_tenants_usage_counts_its_threads_and_its_entries_bytes(store: Store) -> None:
    acme, other = store.of_tenant("acme"), store.of_tenant("globex")
    assert await acme.threads.tenant_usage() == (0, 0)
    await acme.threads.create("t", config())
    await acme.threads.create("u", config())
    await acme.entries.append(batch("t", user("q1", "u1", "é" * 10)))  # 20 bytes, and "[]"
    await other.threads.create("t", config())
    assert await acme.threads.tenant_usage() == (2, 22)
    assert await other.threads.tenant_usage() == (1, 0)
