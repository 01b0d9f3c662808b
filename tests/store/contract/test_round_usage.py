"""A round's reported usage: stored beside what was expected, replaced when reported again."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from pioneer_grpc.store.port import RoundUsageRecord, Store

MOMENT = datetime(2026, 12, 7, 17, 0, tzinfo=UTC)


def _usage(
    thread_id: str = "t", turn_id: str = "u1", event: int = 1, messages: int = 1, **values: object
) -> RoundUsageRecord:
    record = RoundUsageRecord(
        thread_id=thread_id,
        turn_id=turn_id,
        manifest_event_id=event,
        turn_message_count=messages,
        provider=3,
        model="claude-sonnet-4-5",
        input_tokens=12_000,
        cache_read_input_tokens=9_000,
        cache_write_input_tokens=2_500,
        output_tokens=300,
        reasoning_output_tokens=None,
        expected_input_tokens=11_900,
        expected_cache_read_input_tokens=9_100,
        expected_cache_write_input_tokens=None,
        expected_input_cost_usd=0.0153,
        reported_input_cost_usd=0.0155,
        break_cause=3,
        break_detail="e7",
        break_tokens_invalidated=1_500,
        break_tokens_kept=7_000,
        reported_at=MOMENT,
    )
    return replace(record, **values)  # type: ignore[arg-type]


async def test_a_recorded_round_reads_back_with_every_value(store: Store) -> None:
    await store.usage.record(_usage())
    [found] = await store.usage.thread_rounds("t", 10)
    assert replace(found, reported_at=MOMENT) == _usage()
    assert found.reported_at.replace(tzinfo=UTC) == MOMENT


async def test_unknowns_stay_unknown(store: Store) -> None:
    unknown = _usage(
        cache_read_input_tokens=None,
        cache_write_input_tokens=None,
        expected_input_tokens=None,
        expected_cache_read_input_tokens=None,
        expected_input_cost_usd=None,
        reported_input_cost_usd=None,
        break_cause=0,
        break_detail="",
    )
    await store.usage.record(unknown)
    [found] = await store.usage.thread_rounds("t", 10)
    assert found.cache_read_input_tokens is None and found.expected_input_cost_usd is None
    assert found.break_cause == 0


async def test_the_same_round_reported_again_replaces_it_in_its_place_and_others_stay(store: Store) -> None:
    await store.usage.record(_usage(messages=1))
    await store.usage.record(_usage(messages=3, reported_at=MOMENT + timedelta(seconds=1)))
    await store.usage.record(_usage(thread_id="other"))
    await store.usage.record(_usage(messages=1, input_tokens=13_000))
    rounds = await store.usage.thread_rounds("t", 10)
    assert [(r.turn_message_count, r.input_tokens) for r in rounds] == [(3, 12_000), (1, 13_000)]
    assert [r.turn_message_count for r in await store.usage.thread_rounds("t", 1)] == [3]
    assert await store.usage.thread_rounds("none", 10) == []
