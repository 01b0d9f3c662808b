"""History reads: the state that versions a thread's history, what changed after a kept answer, the whole."""

from __future__ import annotations

import asyncio

import pytest

from pioneer_grpc.store.port import NO_ENTRIES, Extendable, HistoryAsk, KeptCounts, Store, SummaryToStore
from tests.store.contract.rows import CL100K, O200K, answer, batch, call, config, result, turn, user


async def _three_turns(store: Store) -> None:
    await store.threads.create("t", config())
    for n in (1, 2, 3):
        await turn(store, "t", f"u{n}", user(f"q{n}", f"u{n}"), answer(f"a{n}", f"u{n}"))


async def test_the_state_moves_with_each_completed_turn_and_nothing_else(store: Store) -> None:
    await _three_turns(store)
    read = await store.history.read(HistoryAsk("t", whole=False))
    assert read.state.completed_count == 6
    assert read.state.summary_id is None and read.state.compaction_failed_sequence is None
    assert (read.left_out, read.excluded_completed, read.newer, read.whole) == ((0, 0), False, [], None)
    await store.entries.append(batch("t", user("q4", "u4")))  # open: the state does not move
    assert (await store.history.read(HistoryAsk("t", whole=False))).state == read.state
    await store.turns.complete("t", "u4")
    moved = (await store.history.read(HistoryAsk("t", whole=False))).state
    assert moved.completed_count == 7 and moved.completed_max_id != read.state.completed_max_id


async def test_a_read_leaves_out_a_turn_and_says_what_else_it_leaves_out(store: Store) -> None:
    await _three_turns(store)
    await store.entries.append(batch("t", user("q4", "u4"), call("c4", "u4", "k1")))
    await store.entries.append(batch("t", user("q5", "u5")))
    read = await store.history.read(HistoryAsk("t", "u4", whole=False))
    assert read.left_out == (1, 1) and not read.excluded_completed
    completed = await store.history.read(HistoryAsk("t", "u2"))
    assert completed.excluded_completed
    assert completed.whole is not None and completed.whole.key == "u2"
    assert [e.entry_id for e in completed.whole.entries] == ["q1", "a1", "q3", "a3"]


async def test_the_whole_history_is_the_newest_turns_after_the_summary(store: Store) -> None:
    await _three_turns(store)
    read = await store.history.read(HistoryAsk("t", max_turns=2))
    assert read.whole is not None
    assert [e.entry_id for e in read.whole.entries] == ["q2", "a2", "q3", "a3"]
    assert read.whole.more and read.whole.summary is None and read.whole.key == ""
    assert all(e.completed and e.tokenizer == CL100K for e in read.whole.entries)
    q1 = (await store.history.read(HistoryAsk("t"))).whole.entries[0]  # type: ignore[union-attr]
    summary = SummaryToStore("the first turn", 12, CL100K, "a1", q1.sequence + 1, "m", "extractive")
    after = await store.history.store_summary("t", summary, "")
    assert after.state.summary_id is not None and after.state != read.state
    whole = (await store.history.read(HistoryAsk("t"))).whole
    assert whole is not None and whole.summary is not None
    assert (whole.summary.text, whole.summary.token_count, whole.summary.tokenizer) == (
        "the first turn",
        12,
        CL100K,
    )
    assert [e.entry_id for e in whole.entries] == ["q2", "a2", "q3", "a3"]
    assert not whole.more
    latest = await store.history.latest_summary("t")
    assert latest is not None and latest.text == "the first turn" and latest.covers_through_entry_id == "a1"


async def test_a_kept_state_reads_nothing_more_and_new_turns_read_only_themselves(store: Store) -> None:
    await _three_turns(store)
    first = await store.history.read(HistoryAsk("t"))
    assert first.whole is not None
    state, through = first.state, first.whole.entries[-1].sequence
    same = await store.history.read(HistoryAsk("t", known=(state,)))
    assert (same.newer, same.whole) == ([], None)
    await turn(store, "t", "u4", user("q4", "u4"), answer("a4", "u4"))
    grown = await store.history.read(HistoryAsk("t", extend=Extendable(state, through)))
    assert [e.entry_id for e in grown.newer] == ["q4", "a4"] and grown.whole is None
    assert grown.after == through
    await store.threads.update("t", config(max_context_tokens=9000), config())
    changed = await store.history.read(HistoryAsk("t", extend=Extendable(state, through)))
    assert changed.whole is not None  # a setting changed too: the newer entries are not all


async def test_counts_in_another_tokenizer_are_read_once_kept(store: Store) -> None:
    await _three_turns(store)
    await store.threads.update("t", config("gpt-4o"), config())
    whole = (await store.history.read(HistoryAsk("t"))).whole
    assert whole is not None and whole.tokenizer == O200K
    assert {e.tokenizer for e in whole.entries} == {CL100K}  # still to count
    await store.history.keep_counts(KeptCounts(O200K, {whole.entries[0].sequence: 99}))
    again = (await store.history.read(HistoryAsk("t"))).whole
    assert again is not None
    assert (again.entries[0].token_count, again.entries[0].tokenizer) == (99, O200K)
    assert again.entries[1].tokenizer == CL100K


async def test_a_failed_compaction_marks_the_thread_until_a_summary(store: Store) -> None:
    await _three_turns(store)
    await store.history.mark_compaction_failed("t", 5)
    assert (await store.history.read(HistoryAsk("t", whole=False))).state.compaction_failed_sequence == 5
    summary = SummaryToStore("s", 3, CL100K, "a1", 2, "m", "extractive")
    after = await store.history.store_summary("t", summary, "")
    assert after.state.compaction_failed_sequence is None
    assert after.after == NO_ENTRIES and after.newer == []


async def test_one_caller_compresses_a_thread_at_a_time(store: Store) -> None:
    await store.threads.create("t", config())
    async with store.history.compression_lock("t", 5) as held:
        assert held
        async with store.history.compression_lock("t", 0.2) as second:
            assert not second
        async with store.history.compression_lock("other", 0.2) as other:
            assert other
    async with store.history.compression_lock("t", 0.2) as again:
        assert again


async def test_a_waiting_caller_gets_the_lock_once_it_is_given_back(store: Store) -> None:
    await store.threads.create("t", config())
    order: list[str] = []

    async def hold() -> None:
        async with store.history.compression_lock("t", 5) as held:
            assert held
            order.append("first")
            await asyncio.sleep(0.2)
        order.append("released")

    first = asyncio.create_task(hold())
    await asyncio.sleep(0.05)
    async with store.history.compression_lock("t", 5) as held:
        assert held
        order.append("second")
    await first
    assert order == ["first", "released", "second"]


async def test_an_unknown_thread_holds_nothing_and_is_not_found(store: Store) -> None:
    from pioneer_grpc.errors import NotFound

    held = await store.entries.stored_calls("nope", [result("e1", "u1", "c1")])
    assert (held.turns, held.thread_calls) == ({}, {})
    with pytest.raises(NotFound):
        await store.history.latest_summary("nope")
    with pytest.raises(NotFound):
        await store.history.read(HistoryAsk("nope"))
