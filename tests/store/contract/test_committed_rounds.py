"""Every committed round has its row on the thread's timeline: written by the round's commit (its
time, provider, model, decision and break, no usage), one row however often the round is committed,
filled in place by a later report of its usage; nothing for a commit that met a Conflict, and gone
with its thread or its abandoned turn."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from pioneer_grpc.store.clock import as_utc
from pioneer_grpc.store.port import (
    Conflict,
    Recorded,
    RoundPrepared,
    RoundUsageRecord,
    Store,
    ThreadFilter,
)
from pioneer_grpc.v1 import history_pb2
from tests.store.contract.rows import answer, batch, call, config, result, round_ask, round_commit, user
from tests.store.contract.test_round_usage import _usage

H = history_pb2
SECTION_BREAK = RoundPrepared(
    turn_message_count=1,
    provider=3,
    model="claude-sonnet-4-5",
    history_decision=H.HISTORY_DECISION_TRUNCATED,
    break_cause=H.PREFIX_BREAK_CAUSE_SECTION,
    break_detail="soul_core",
    break_tokens_invalidated=1_200,
    break_tokens_kept=300,
    break_entry_ids=("e1", "e2"),
    break_entry_count=5,
)


async def _round(
    store: Store,
    turn_id: str,
    prepared: RoundPrepared | None,
    *entries: H.ConversationEntry,
    call_ids: tuple[str, ...] = (),
) -> Recorded:
    opened = await store.rounds.open(round_ask(turn_id, call_ids))
    recorded = await store.rounds.commit(round_commit(opened, turn_id, *entries, prepared=prepared))
    assert isinstance(recorded, Recorded)
    return recorded


async def _timeline(
    store: Store, thread_id: str = "t"
) -> tuple[list[tuple[int, RoundUsageRecord]], int, int]:
    return await store.usage.timeline(thread_id, 0, 100, False)


async def test_a_committed_round_has_its_row_with_its_time_break_and_decision_and_no_usage(
    store: Store,
) -> None:
    await store.threads.create("t", config())
    before = datetime.now(UTC) - timedelta(seconds=1)
    recorded = await _round(store, "u1", SECTION_BREAK, user("q1", "u1"))
    [(number, row)], rounds, breaks = await _timeline(store)
    assert (number, rounds, breaks) == (1, 1, 1)
    # The turn's event id as committed (PostgreSQL draws it at COMMIT, renumbering the row too).
    on_turn = await store.manifests.turn_manifest("t", "u1")
    assert row.manifest_event_id == recorded.event_id == on_turn.event_id > 0
    assert (row.thread_id, row.turn_id, row.turn_message_count) == ("t", "u1", 1)
    assert (row.provider, row.model, row.history_decision) == (
        3,
        "claude-sonnet-4-5",
        H.HISTORY_DECISION_TRUNCATED,
    )
    assert (row.break_cause, row.break_detail) == (H.PREFIX_BREAK_CAUSE_SECTION, "soul_core")
    assert (row.break_tokens_invalidated, row.break_tokens_kept) == (1_200, 300)
    assert (row.break_entry_ids, row.break_entry_count) == (("e1", "e2"), 5)
    assert row.prepared_at is not None and before < as_utc(row.prepared_at) < before + timedelta(minutes=5)
    assert not row.reported and row.reported_at is None
    assert (row.input_tokens, row.output_tokens, row.cache_read_input_tokens) == (None, None, None)
    assert (row.expected_input_tokens, row.expected_input_cost_usd, row.reported_input_cost_usd) == (
        None,
        None,
        None,
    )
    # Usage is listed for reported rounds only.
    assert await store.usage.thread_rounds("t", 10) == []


async def test_a_commit_without_a_round_writes_no_row(store: Store) -> None:
    await store.threads.create("t", config())
    await _round(store, "u1", None, user("q1", "u1"))
    assert await _timeline(store) == ([], 0, 0)


async def test_the_same_round_committed_again_is_one_row(store: Store) -> None:
    await store.threads.create("t", config())
    first = await _round(store, "u1", SECTION_BREAK, user("q1", "u1"))
    [(_, row)], _, _ = await _timeline(store)
    # A PrepareTurn sent again: the same entries, the same manifest, the same count of messages.
    again = await _round(store, "u1", replace(SECTION_BREAK, break_cause=0), user("q1", "u1"))
    assert again == Recorded(first.event_id, None)
    found, rounds, breaks = await _timeline(store)
    assert (rounds, breaks) == (1, 1)
    assert found == [(1, row)]  # its time and break as first committed


async def test_a_report_fills_the_round_in_place_and_it_keeps_its_number(store: Store) -> None:
    await store.threads.create("t", config())
    one = await _round(store, "u1", SECTION_BREAK, user("q1", "u1"), call("c", "u1", "c1"))
    later = replace(SECTION_BREAK, turn_message_count=3, break_cause=0, break_detail="", break_entry_ids=())
    two = await _round(store, "u1", later, result("r", "u1", "c1"), call_ids=("c1",))
    assert two.event_id == one.event_id  # the same prompt: rounds of the turn share the event
    [(_, first), (_, second)], _, _ = await _timeline(store)
    await store.usage.record(
        _usage(
            event=one.event_id,
            messages=2,
            break_cause=H.PREFIX_BREAK_CAUSE_MODEL,
            reported_at=datetime(2026, 12, 7, 18, 0, tzinfo=UTC),
        )
    )  # the turn's first round sent 2 of its messages: this report is of no round committed here
    await store.usage.record(_usage(event=one.event_id, messages=1, break_cause=H.PREFIX_BREAK_CAUSE_MODEL))
    found, rounds, breaks = await _timeline(store)
    assert (rounds, breaks) == (3, 2)
    assert [(n, r.turn_message_count, r.reported) for n, r in found] == [
        (1, 1, True),
        (2, 3, False),
        (3, 2, True),
    ]
    filled = found[0][1]
    # The report's figures; the commit's time, break and decision.
    reported = _usage(event=one.event_id, messages=1)
    assert (filled.input_tokens, filled.cache_read_input_tokens, filled.output_tokens) == (12_000, 9_000, 300)
    assert (filled.expected_input_tokens, filled.expected_input_cost_usd) == (11_900, 0.0153)
    assert filled.reported_input_cost_usd == reported.reported_input_cost_usd
    assert filled.reported_at is not None and as_utc(filled.reported_at) == reported.reported_at
    assert filled.prepared_at == first.prepared_at
    assert (filled.break_cause, filled.break_detail, filled.history_decision) == (
        H.PREFIX_BREAK_CAUSE_SECTION,
        "soul_core",
        H.HISTORY_DECISION_TRUNCATED,
    )
    assert found[1] == (2, second)
    # Reported again (a retried call): the figures replaced, still one row in its place.
    await store.usage.record(_usage(event=one.event_id, messages=1, input_tokens=13_000))
    found, rounds, _ = await _timeline(store)
    assert rounds == 3 and found[0][0] == 1 and found[0][1].input_tokens == 13_000
    assert [(r.turn_message_count, r.input_tokens) for r in await store.usage.thread_rounds("t", 10)] == [
        (2, 12_000),
        (1, 13_000),
    ]


async def test_a_commit_that_met_a_conflict_writes_no_row(store: Store) -> None:
    await store.threads.create("t", config())
    opened = await store.rounds.open(round_ask("u2"))
    await store.entries.append(batch("t", user("q1", "u1")))  # the thread changed since the open
    assert (
        await store.rounds.commit(round_commit(opened, "u2", user("q2", "u2"), prepared=SECTION_BREAK))
        == Conflict()
    )
    assert await _timeline(store) == ([], 0, 0)


async def test_the_rows_go_with_their_thread_and_their_abandoned_turn(store: Store) -> None:
    await store.threads.create("t", config())
    await _round(store, "u1", SECTION_BREAK, user("q1", "u1"), answer("a1", "u1"))
    await store.turns.complete("t", "u1")
    await _round(store, "u2", replace(SECTION_BREAK, break_cause=0), user("q2", "u2"))
    assert (await _timeline(store))[1] == 2
    await store.turns.abandon("t", "u2")
    assert [r.turn_id for _, r in (await _timeline(store))[0]] == ["u1"]
    await store.threads.delete("t")
    await store.threads.create("t", config())
    assert await _timeline(store) == ([], 0, 0)


async def test_a_committed_round_that_broke_marks_its_thread_as_having_breaks(store: Store) -> None:
    await store.threads.create("t", config())
    await store.threads.create("held", config())
    await _round(store, "u1", SECTION_BREAK, user("q1", "u1"))
    broke, _ = await store.listing.threads(None, 10, where=ThreadFilter(has_cache_breaks=True))
    held, _ = await store.listing.threads(None, 10, where=ThreadFilter(has_cache_breaks=False))
    assert [t.thread_id for t in broke] == ["t"] and [t.thread_id for t in held] == ["held"]
