"""Dropping an open turn (AbandonTurn) and a whole thread (DeleteThread), on every store."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pioneer_grpc import reasons
from pioneer_grpc.errors import FailedPrecondition, NotFound
from pioneer_grpc.store.port import Conflict, HistoryAsk, RoundAsk, RoundCommit, RoundUsageRecord, Store
from tests.store.contract.rows import (
    CL100K,
    answer,
    batch,
    call,
    config,
    counted,
    manifest,
    result,
    turn,
    user,
)


async def _round(store: Store, turn_id: str, *entries: object) -> None:
    opened = await store.rounds.open(RoundAsk("t", turn_id, HistoryAsk("t", turn_id)))
    commit = RoundCommit(
        "t",
        turn_id,
        opened.version,
        None if opened.turn is None else opened.turn.status,
        manifest("t", turn_id),
        counted(*entries),  # type: ignore[arg-type]
        CL100K,
        opens_turn=not opened.turn_entries,
    )
    await store.rounds.commit(commit)


async def test_an_abandoned_turn_leaves_the_thread_as_if_it_never_happened(store: Store) -> None:
    await store.threads.create("t", config())
    await turn(store, "t", "u1", user("q1", "u1"), answer("a1", "u1"))
    before = await store.history.read(HistoryAsk("t", "u3"))
    await _round(store, "u2", user("q2", "u2"), call("c2", "u2", "k1"))
    await store.entries.append(batch("t", result("r2", "u2", "k1")))
    assert (await store.history.read(HistoryAsk("t", "u3"))).left_out == (3, 1)
    assert await store.turns.abandon("t", "u2") == 3
    after = await store.history.read(HistoryAsk("t", "u3"))
    assert after.left_out == (0, 0)
    assert after.state == before.state and after.whole == before.whole
    assert (await store.threads.get("t")).entry_count == 2
    with pytest.raises(NotFound) as gone:
        await store.manifests.turn_manifest("t", "u2")
    assert gone.value.reason == reasons.TURN_NOT_FOUND
    assert [e.turn_id for e in await store.manifests.events_after(0, thread_id="t")] == []
    # The ids are free again: the same call id and entry ids, other content, a turn from scratch.
    await _round(store, "u2", user("q2", "u2", "another question"), call("c2", "u2", "k1"))
    again = await store.rounds.open(RoundAsk("t", "u2", HistoryAsk("t", "u2")))
    assert again.turn_entries[0].content == "another question"


async def test_abandon_refuses_a_completed_turn_and_names_an_unknown_one(store: Store) -> None:
    await store.threads.create("t", config())
    await turn(store, "t", "u1", user("q1", "u1"), answer("a1", "u1"))
    with pytest.raises(FailedPrecondition) as completed:
        await store.turns.abandon("t", "u1")
    assert completed.value.reason == reasons.TURN_COMPLETED
    assert (await store.threads.get("t")).entry_count == 2
    with pytest.raises(NotFound) as unknown:
        await store.turns.abandon("t", "u9")
    assert unknown.value.reason == reasons.TURN_NOT_FOUND
    assert await store.turns.abandon("t", "u9", allow_missing=True) is None
    with pytest.raises(NotFound) as no_thread:
        await store.turns.abandon("t9", "u1", allow_missing=True)
    assert no_thread.value.reason == reasons.THREAD_NOT_FOUND


async def test_abandon_twice_is_done_once(store: Store) -> None:
    await store.threads.create("t", config())
    await store.entries.append(batch("t", user("q1", "u1")))
    assert await store.turns.abandon("t", "u1", allow_missing=True) == 1
    assert await store.turns.abandon("t", "u1", allow_missing=True) is None


async def test_a_deleted_thread_is_gone_and_its_id_starts_again_from_scratch(store: Store) -> None:
    await store.threads.create("t", config())
    await turn(store, "t", "u1", user("q1", "u1"), answer("a1", "u1"))
    old = await store.history.read(HistoryAsk("t"))
    assert await store.threads.delete("t") is not None
    assert await store.threads.delete("t") is None
    with pytest.raises(NotFound):
        await store.threads.get("t")
    assert await store.manifests.events_after(0, thread_id="t") == []
    await store.threads.create("t", config(max_context_tokens=9000))
    fresh = await store.history.read(HistoryAsk("t"))
    assert fresh.whole is not None and fresh.whole.entries == []
    assert fresh.state.created != old.state.created
    assert (await store.threads.get("t")).config.max_context_tokens == 9000
    await turn(store, "t", "u1", user("q1", "u1", "new"), answer("a1", "u1"))
    whole = (await store.history.read(HistoryAsk("t"))).whole
    assert whole is not None and [e.content for e in whole.entries] == ["new", "done"]


def _usage(turn_id: str) -> RoundUsageRecord:
    return RoundUsageRecord(
        "t", turn_id, 1, 1, 1, "claude-sonnet-4-5", 100, 90, 0, 7, None,
        100, 90, 0, 0.0001, 0.0001, 0, "", 0, 0, datetime.now(UTC),
    )  # fmt: skip


async def test_the_usage_of_dropped_rounds_goes_with_them(store: Store) -> None:
    await store.threads.create("t", config())
    await _round(store, "u1", user("q1", "u1"))
    await _round(store, "u2", user("q2", "u2"))
    await store.usage.record(_usage("u1"))
    await store.usage.record(_usage("u2"))
    await store.turns.abandon("t", "u2")
    assert [row.turn_id for row in await store.usage.thread_rounds("t", 10)] == ["u1"]
    assert await store.threads.delete("t") is not None
    await store.threads.create("t", config())
    assert await store.usage.thread_rounds("t", 10) == []


async def test_a_round_opened_before_its_turn_was_abandoned_and_made_again_does_not_commit(
    store: Store,
) -> None:
    # The turn's entries dropped and the same number appended again: the thread's counts are as the
    # round read them, yet the turn it read is gone. Its commit must see that and write nothing.
    await store.threads.create("t", config())
    await _round(store, "u2", user("q2", "u2"))
    opened = await store.rounds.open(RoundAsk("t", "u2", HistoryAsk("t", "u2")))
    assert [e.content for e in opened.turn_entries] == ["hello"]
    assert await store.turns.abandon("t", "u2") == 1
    await store.entries.append(batch("t", user("q2", "u2", "asked again")))
    plan = RoundCommit(
        "t", "u2", opened.version, opened.turn.status if opened.turn else None, manifest("t", "u2", "other")
    )
    assert isinstance(await store.rounds.commit(plan), Conflict)
    assert [e.turn_id for e in await store.manifests.events_after(0, thread_id="t")] == []
