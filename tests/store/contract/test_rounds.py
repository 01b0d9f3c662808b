"""A round: one read of everything it needs, then one commit, which writes only on the thread it read."""

from __future__ import annotations

import asyncio

import pytest

from pioneer_grpc.errors import NotFound
from pioneer_grpc.store.port import Conflict, HistoryAsk, Recorded, Store
from pioneer_grpc.v1 import history_pb2
from tests.store.contract.rows import (
    CL100K,
    answer,
    batch,
    call,
    config,
    manifest,
    result,
    round_ask,
    round_commit,
    turn,
    user,
)


async def test_a_round_on_a_new_turn_writes_its_entries_and_its_manifest(store: Store) -> None:
    await store.threads.create("t", config())
    await turn(store, "t", "u1", user("q1", "u1"), answer("a1", "u1"))
    opened = await store.rounds.open(round_ask("u2", entry_ids=("q2",)))
    assert opened.turn is None and opened.turn_entries == [] and opened.stored == {}
    assert opened.history.whole is not None
    assert [e.entry_id for e in opened.history.whole.entries] == ["q1", "a1"]
    recorded = await store.rounds.commit(round_commit(opened, "u2", user("q2", "u2")))
    assert isinstance(recorded, Recorded) and recorded.event is not None
    assert recorded.event_id > 0 and recorded.event.event_id == recorded.event_id
    assert recorded.event.manifest.thread_id == "t" and recorded.event.manifest.turn_id == "u2"
    again = await store.rounds.open(round_ask("u2"))
    assert again.turn is not None and again.turn.status == history_pb2.TURN_STATUS_IN_PROGRESS
    assert again.turn.event_id == recorded.event_id
    assert [e.entry_id for e in again.turn_entries] == ["q2"]
    assert again.history.left_out == (0, 0)  # the round's own turn is not counted
    on_turn = await store.manifests.turn_manifest("t", "u2")
    assert on_turn.event_id == recorded.event_id and on_turn.manifest == recorded.event.manifest
    assert [e.event_id for e in await store.manifests.events_after(0, thread_id="t")] == [recorded.event_id]
    read = await store.history.read(HistoryAsk("t", whole=False))
    assert read.left_out == (1, 1)


async def test_a_round_repeating_its_manifest_records_no_new_event(store: Store) -> None:
    await store.threads.create("t", config())
    opened = await store.rounds.open(round_ask("u1"))
    first = await store.rounds.commit(round_commit(opened, "u1", user("q1", "u1")))
    assert isinstance(first, Recorded)
    opened = await store.rounds.open(round_ask("u1", call_ids=("c1",)))
    second = await store.rounds.commit(round_commit(opened, "u1", call("c", "u1", "c1")))
    assert second == Recorded(first.event_id, None)
    opened = await store.rounds.open(round_ask("u1", call_ids=("c1",)))
    assert opened.thread_calls == {"c1": "c"}
    third = await store.rounds.commit(round_commit(opened, "u1", result("r", "u1", "c1"), stable="s2"))
    assert isinstance(third, Recorded) and third.event is not None and third.event_id > first.event_id
    assert await store.manifests.newest_event_id() == third.event_id


async def test_a_round_reads_which_of_its_entries_the_thread_holds(store: Store) -> None:
    await store.threads.create("t", config())
    await turn(store, "t", "u1", user("q1", "u1"), answer("a1", "u1"))
    await store.entries.append(batch("t", user("q2", "u2")))
    opened = await store.rounds.open(round_ask("u2", entry_ids=("q1", "q2", "q3")))
    assert sorted(opened.stored) == ["q1", "q2"]
    assert opened.stored["q1"].entry.turn_id == "u1"
    assert opened.stored["q1"].entry.role == history_pb2.ENTRY_ROLE_USER
    assert opened.stored["q2"].entry.content == "hello" and len(opened.stored["q2"].content_hash) == 64
    assert [e.entry_id for e in opened.turn_entries] == ["q2"]


async def test_a_round_commits_nothing_on_a_thread_that_changed_since_it_was_opened(store: Store) -> None:
    await store.threads.create("t", config())
    opened = await store.rounds.open(round_ask("u2"))
    await store.entries.append(batch("t", user("x1", "u9")))  # another turn of the same thread
    assert await store.rounds.commit(round_commit(opened, "u2", user("q2", "u2"))) == Conflict()
    with pytest.raises(NotFound):
        await store.manifests.turn_manifest("t", "u2")
    assert await store.manifests.newest_event_id() == 0
    reopened = await store.rounds.open(round_ask("u2"))
    assert isinstance(await store.rounds.commit(round_commit(reopened, "u2", user("q2", "u2"))), Recorded)


async def test_a_round_whose_turn_completed_meanwhile_commits_nothing(store: Store) -> None:
    await store.threads.create("t", config())
    await store.manifests.record(manifest("t", "u1", "s0"))  # the turn exists, without entries
    opened = await store.rounds.open(round_ask("u1"))
    assert opened.turn is not None and opened.turn.event_id is not None
    await store.turns.complete("t", "u1")  # no entries: the thread's row does not change
    assert await store.rounds.commit(round_commit(opened, "u1", user("q1", "u1"))) == Conflict()


async def test_a_summary_stored_meanwhile_is_a_change(store: Store) -> None:
    from pioneer_grpc.store.port import SummaryToStore

    await store.threads.create("t", config())
    await turn(store, "t", "u1", user("q1", "u1"), answer("a1", "u1"))
    opened = await store.rounds.open(round_ask("u2"))
    await store.history.store_summary("t", SummaryToStore("s", 2, CL100K, "a1", 10**6, "m", "x"), "")
    assert await store.rounds.commit(round_commit(opened, "u2", user("q2", "u2"))) == Conflict()


async def test_a_manifest_recorded_meanwhile_is_no_change(store: Store) -> None:
    await store.threads.create("t", config())
    opened = await store.rounds.open(round_ask("u1"))
    await store.manifests.record(manifest("t", "u1", "s0"))
    recorded = await store.rounds.commit(round_commit(opened, "u1", user("q1", "u1")))
    assert isinstance(recorded, Recorded) and recorded.event is not None
    assert (await store.manifests.turn_manifest("t", "u1")).manifest.fingerprint_stable == "s1"


async def test_a_round_on_an_unknown_thread_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        await store.rounds.open(round_ask("u1"))


async def test_a_commit_says_it_is_under_way_whatever_its_outcome(store: Store) -> None:
    """The caller works beside a commit once `sent` resolves, then awaits the outcome: a commit that
    records, one that conflicts and one on a thread deleted meanwhile each resolve it."""
    await store.threads.create("t", config())
    under_way = store.rounds.commit(
        round_commit(await store.rounds.open(round_ask("u1")), "u1", user("q1", "u1"))
    )
    await asyncio.wait_for(under_way.sent, 10)
    assert isinstance(await under_way, Recorded)

    opened = await store.rounds.open(round_ask("u2"))
    await store.entries.append(batch("t", user("x1", "u9")))
    under_way = store.rounds.commit(round_commit(opened, "u2", user("q2", "u2")))
    await asyncio.wait_for(under_way.sent, 10)
    assert await under_way == Conflict()

    opened = await store.rounds.open(round_ask("u3"))
    assert await store.threads.delete("t") is not None
    under_way = store.rounds.commit(round_commit(opened, "u3", user("q3", "u3")))
    await asyncio.wait_for(under_way.sent, 10)
    with pytest.raises(NotFound):
        await under_way
