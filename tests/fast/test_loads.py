"""LoadConversationHistory as a use case (service/history_load.py): kept answers, answers brought
current by completed turns, whole reads, and a history over its threshold."""

from __future__ import annotations

import pytest

from pioneer_grpc.errors import InvalidArgument, NotFound
from pioneer_grpc.service import history
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.store.entries import RowsRead
from pioneer_grpc.v1 import history_pb2
from tests.fast.conftest import Crossings
from tests.store.contract.rows import answer, user

LONG = "We decided to use Postgres for the service and kept the rollout plan as agreed. " * 6


async def _thread(ctx: ServiceContext, turns: int, **config: int) -> None:
    await history.create_thread(ctx, "t", history_pb2.ThreadConfig(model="claude-sonnet-4-5", **config))
    for n in range(turns):
        await history.complete_turn(
            ctx, "t", f"u{n}", [user(f"q{n}", "", f"Q{n}: {LONG}"), answer(f"a{n}", "", LONG)]
        )


async def test_a_load_reads_once_and_a_repeated_one_reads_nothing_more(
    ctx: ServiceContext, crossings: Crossings
) -> None:
    await _thread(ctx, 3)
    crossings.clear()
    messages, report = await history.load_history(ctx, "t")
    assert len(messages) == 6 and report.decision == history_pb2.HISTORY_DECISION_FULL
    assert crossings.calls == ["history.read"]
    before = RowsRead.entries
    crossings.clear()
    again, _ = await history.load_history(ctx, "t")
    assert again == messages and crossings.calls == ["history.read"]
    assert RowsRead.entries == before  # the memory store counts no rows: the SQL stores do


async def test_a_completed_turn_brings_the_kept_history_current(ctx: ServiceContext) -> None:
    await _thread(ctx, 3)
    await history.load_history(ctx, "t")
    await history.complete_turn(ctx, "t", "u3", [user("q3", "", "one more"), answer("a3", "", "done")])
    kept = ctx.load_cache.extendable(("default", "t"))
    messages, report = await history.load_history(ctx, "t")
    assert [m.content for m in messages[-2:]] == ["one more", "done"]
    assert ctx.load_cache.extendable(("default", "t")) is not kept  # extended, not read whole
    ctx.load_cache.clear()
    whole, whole_report = await history.load_history(ctx, "t")
    assert whole == messages and whole_report == report


async def test_other_turns_in_progress_are_left_out_and_said(ctx: ServiceContext) -> None:
    await _thread(ctx, 1)
    await history.append_entries(ctx, "t", [user("open", "u5", "not done")])
    messages, report = await history.load_history(ctx, "t")
    assert "open" not in [m.content for m in messages]
    assert [d.code for d in report.diagnostics] == ["incomplete_turns_left_out"]
    _, excluding = await history.load_history(ctx, "t", exclude_turn_id="u5")
    assert not excluding.diagnostics


async def test_a_history_over_its_threshold_is_summarized_and_the_summary_kept(ctx: ServiceContext) -> None:
    await _thread(ctx, 12, max_context_tokens=3000, response_reserve_tokens=1000)
    messages, report = await history.load_history(ctx, "t")
    assert report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED
    assert messages[0].content.startswith("Summary of earlier conversation:")
    summary = await history.get_summary(ctx, "t")
    assert summary is not None and summary.summarizer == "extractive"
    again, second = await history.load_history(ctx, "t")
    assert second.summary_use == history_pb2.SUMMARY_USE_REUSED and again == messages


async def test_a_dry_run_stores_nothing_and_the_truncate_strategy_never_summarizes(
    ctx: ServiceContext,
) -> None:
    await _thread(ctx, 12, max_context_tokens=3000, response_reserve_tokens=1000)
    _, report = await history.load_history(ctx, "t", dry_run=True)
    assert (report.decision, report.summary_use) == (
        history_pb2.HISTORY_DECISION_SUMMARIZED,
        history_pb2.SUMMARY_USE_NONE,
    )
    assert [d.code for d in report.diagnostics] == ["compression_pending"]
    assert await history.get_summary(ctx, "t") is None
    await history.update_thread(
        ctx, "t", history_pb2.ThreadConfig(compaction_strategy=history_pb2.COMPACTION_STRATEGY_TRUNCATE), []
    )
    _, truncated = await history.load_history(ctx, "t")
    assert truncated.decision == history_pb2.HISTORY_DECISION_TRUNCATED
    # The older turns left out by a mark: a summary row with no text that no summarizer wrote.
    mark = await history.get_summary(ctx, "t")
    assert mark is not None and (mark.summarizer, mark.text) == ("truncate", "")


async def test_a_load_of_nothing_is_named(ctx: ServiceContext) -> None:
    with pytest.raises(NotFound):
        await history.load_history(ctx, "nope")
    with pytest.raises(InvalidArgument):
        await history.load_history(ctx, "")
