"""A failed tool result (ConversationEntry.is_error) is stored and read back marked on every path."""

from __future__ import annotations

import pytest

from pioneer_grpc import reasons
from pioneer_grpc.errors import AlreadyExists
from pioneer_grpc.store.port import AppendOutcome, HistoryAsk, OpenedRound, RoundAsk, RoundCommit, Store
from pioneer_grpc.v1 import history_pb2
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


def failed(entry_id: str, turn_id: str, call_id: str) -> history_pb2.ConversationEntry:
    entry = result(entry_id, turn_id, call_id)
    entry.content = "ENOENT: a.txt"
    entry.is_error = True
    return entry


async def test_the_mark_is_read_back_by_appends_loads_listings_and_rounds(store: Store) -> None:
    await store.threads.create("t", config())
    appended = await store.entries.append(
        batch(
            "t",
            user("q1", "u1"),
            call("c1", "u1", "k1"),
            failed("r1", "u1", "k1"),
            call("c3", "u1", "k3"),
            result("r3", "u1", "k3"),
        )
    )
    assert isinstance(appended, AppendOutcome)
    assert [e.is_error for e in appended.entries] == [False, False, True, False, False]
    await store.turns.complete("t", "u1")
    whole = (await store.history.read(HistoryAsk("t"))).whole
    assert whole is not None and [e.is_error for e in whole.entries] == [False, False, True, False, False]
    listed, _ = await store.listing.entries("t", "u1", 0, 10)
    assert [e.is_error for e in listed] == [False, False, True, False, False]
    opened: OpenedRound = await store.rounds.open(
        RoundAsk("t", "u2", HistoryAsk("t", "u2"), entry_ids=("r9",))
    )
    await store.rounds.commit(
        RoundCommit(
            "t",
            "u2",
            opened.version,
            None,
            manifest("t", "u2"),
            counted(call("c2", "u2", "k2"), failed("r9", "u2", "k2")),
            CL100K,
            opens_turn=True,
        )
    )
    again = await store.rounds.open(RoundAsk("t", "u2", HistoryAsk("t", "u2"), entry_ids=("r9",)))
    assert [e.is_error for e in again.turn_entries] == [False, True]
    assert again.stored["r9"].entry.is_error


async def test_a_repeat_must_repeat_the_mark(store: Store) -> None:
    await store.threads.create("t", config())
    await turn(
        store,
        "t",
        "u1",
        user("q1", "u1"),
        call("c1", "u1", "k1"),
        failed("r1", "u1", "k1"),
        answer("a1", "u1"),
    )
    unmarked = result("r1", "u1", "k1")
    unmarked.content = "ENOENT: a.txt"
    with pytest.raises(AlreadyExists) as refused:
        await store.entries.append(batch("t", unmarked))
    assert refused.value.reason == reasons.ENTRY_CONFLICT
    assert refused.value.metadata["differing_fields"] == "is_error"
    repeated = await store.entries.append(batch("t", failed("r1", "u1", "k1")))
    assert isinstance(repeated, AppendOutcome) and repeated.existing_count == 1


async def test_an_append_says_how_many_failed_results_it_stored(store: Store) -> None:
    await store.threads.create("t", config())
    entries = (user("q1", "u1"), call("c1", "u1", "k1"), failed("r1", "u1", "k1"))
    first = await store.entries.append(batch("t", *entries))
    assert isinstance(first, AppendOutcome) and first.failed_results == 1
    again = await store.entries.append(batch("t", *entries))
    assert isinstance(again, AppendOutcome) and again.failed_results == 0
