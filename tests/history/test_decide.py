"""The budget decision on stored counts: full, summarized, truncated, pending."""

from __future__ import annotations

from pioneer_grpc.history import decide
from pioneer_grpc.history.units import group_units
from pioneer_grpc.v1 import chat_pb2, history_pb2
from tests.history.builders import ASSISTANT, TOOL, USER, entry, snapshot, summary


def codes(result: decide.LoadResult) -> list[str]:
    return [d.code for d in result.report.diagnostics]


def test_under_threshold_sends_summary_then_every_entry():
    # budget 1000, threshold 800: summary 96+4 + 3 x (96+4) = 400.
    snap = snapshot(
        [entry("e1", tokens=96), entry("e2", ASSISTANT, 96), entry("e3", tokens=96)], 1000, summary(96)
    )
    assert not snap.needs_compression
    result = decide.full(snap)
    assert [m.role for m in result.messages] == [
        chat_pb2.CHAT_ROLE_SYSTEM,
        chat_pb2.CHAT_ROLE_USER,
        chat_pb2.CHAT_ROLE_ASSISTANT,
        chat_pb2.CHAT_ROLE_USER,
    ]
    assert result.messages[0].content == "Summary of earlier conversation:\nearlier"
    report = result.report
    assert report.decision == history_pb2.HISTORY_DECISION_FULL
    assert report.summary_use == history_pb2.SUMMARY_USE_REUSED
    assert (report.tokens_before, report.tokens_after) == (400, 400)
    assert (report.budget_tokens, report.threshold_tokens, report.summary_target_tokens) == (1000, 800, 100)
    assert (report.entries_loaded, report.entries_kept, report.entries_dropped) == (3, 3, 0)
    assert report.tokenizer == "cl100k_base"


def test_threshold_is_inclusive():
    assert snapshot([entry("e1", tokens=796)], 1000).needs_compression  # 796 + 4 = 800
    assert not snapshot([entry("e1", tokens=795)], 1000).needs_compression


def test_summarized_is_one_system_message():
    snap = snapshot([entry(f"e{i}", tokens=96) for i in range(1, 10)], 1000)
    new = decide.StoredSummary("short", 40, "e9", 9, "extractive")
    assert decide.summary_rejection(new.cost, snap) is None
    result = decide.summarized(snap, new, "extractive")
    assert [m.content for m in result.messages] == ["Summary of earlier conversation:\nshort"]
    report = result.report
    assert report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED
    assert report.summary_use == history_pb2.SUMMARY_USE_CREATED
    assert (report.tokens_before, report.tokens_after) == (900, 44)
    assert (report.entries_kept, report.entries_dropped) == (0, 9)
    assert report.summary_covers_through_entry_id == "e9"


def test_summary_over_one_and_a_half_targets_or_not_smaller_is_rejected():
    snap = snapshot([entry(f"e{i}", tokens=96) for i in range(1, 10)], 1000)  # target 100, limit 150
    assert decide.summary_rejection(150, snap) is None
    assert "over 150 (1.5x the target of 100)" in (decide.summary_rejection(151, snap) or "")
    # A summary must also be smaller than what it replaces (here 100 tokens).
    short_history = snapshot([entry("e1", tokens=96)], 1000)
    assert decide.summary_rejection(99, short_history) is None
    assert decide.summary_rejection(100, short_history) == (
        "summary costs 100 tokens, not less than the 100 it would replace"
    )


def test_truncation_keeps_summary_then_newest_entries_that_fit_in_order():
    entries = [entry(f"e{i}", tokens=196) for i in range(1, 8)]  # 200 each
    result = decide.truncated(snapshot(entries, 1000, summary(196)), history_pb2.SUMMARY_USE_FAILED)
    assert [m.content for m in result.messages] == [
        "Summary of earlier conversation:\nearlier",
        "text of e4",
        "text of e5",
        "text of e6",
        "text of e7",
    ]
    assert result.report.tokens_after == 1000
    assert result.report.decision == history_pb2.HISTORY_DECISION_TRUNCATED
    assert (result.report.entries_kept, result.report.entries_dropped) == (4, 3)


def test_truncation_stops_at_the_first_unit_that_does_not_fit():
    entries = [entry("e1", tokens=46), entry("e2", tokens=496), entry("e3", tokens=396)]
    result = decide.truncated(snapshot(entries, 600), history_pb2.SUMMARY_USE_FAILED)
    assert [m.content for m in result.messages] == ["text of e3"]  # e1 would fit, but e2 stopped the walk


def test_summary_that_does_not_fit_is_dropped_with_a_diagnostic():
    result = decide.truncated(
        snapshot([entry("e1", tokens=96)], 500, summary(596)), history_pb2.SUMMARY_USE_FAILED
    )
    assert [m.content for m in result.messages] == ["text of e1"]
    assert codes(result) == ["summary_dropped"]


def test_tool_call_and_results_are_kept_or_dropped_together():
    entries = [
        entry("u1", tokens=96),
        entry("a1", ASSISTANT, 96, calls=("c1", "c2")),
        entry("r1", TOOL, 96, answers="c1"),
        entry("r2", TOOL, 96, answers="c2"),
        entry("u2", tokens=96),
    ]
    units = group_units(entries)
    assert [[e.entry_id for e in u.entries] for u in units] == [["u1"], ["a1", "r1", "r2"], ["u2"]]
    # 300 tokens leave room for u2 and two of the three pair messages: the pair goes whole
    # (with its whole turn, which starts at u1: truncation keeps whole turns).
    result = decide.truncated(snapshot(entries, 300), history_pb2.SUMMARY_USE_FAILED)
    assert [m.content for m in result.messages] == ["text of u2"]
    assert codes(result) == []
    # Inside a newest turn too large to send whole, the pair is still kept or dropped whole.
    entries[-1] = entry("a2", ASSISTANT, 96)
    result = decide.truncated(snapshot(entries, 300), history_pb2.SUMMARY_USE_FAILED)
    assert [m.content for m in result.messages] == ["text of u1", "text of a2"]
    assert codes(result) == ["tool_pair_kept", "turn_cut"]
    assert result.report.diagnostics[0].entry_id == "a1"


def test_orphan_tool_result_is_never_sent():
    entries = [entry("r0", TOOL, 10, answers="gone"), entry("u1", tokens=10)]
    result = decide.full(snapshot(entries, 1000))
    assert [m.content for m in result.messages] == ["text of u1"]
    assert codes(result) == ["orphan_tool_result_dropped"]
    assert result.report.diagnostics[0].entry_id == "r0"
    assert (result.report.tokens_before, result.report.tokens_after) == (28, 14)


def test_entry_larger_than_the_budget_is_cut_to_fit():
    big = entry("big", USER, 5000, content="x" * 20000)
    result = decide.truncated(snapshot([entry("e1", tokens=10), big], 1000), history_pb2.SUMMARY_USE_FAILED)
    [message] = result.messages
    assert message.content.startswith("x" * 100)
    # content budget = 1000 - 4 - 24 = 972 tokens of 5000 -> 3888 of 20000 characters.
    assert message.content.endswith("[cut to fit the history budget: 3888 of 20000 characters kept]")
    assert result.report.tokens_after <= 1000
    assert codes(result) == ["entry_truncated"]
    assert result.report.diagnostics[0].entry_id == "big"


def test_pending_dry_run_reports_the_compression_and_shows_the_fallback():
    snap = snapshot([entry(f"e{i}", tokens=196) for i in range(1, 8)], 1000)
    result = decide.pending(snap, "extractive")
    assert result.report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED
    assert result.report.summary_use == history_pb2.SUMMARY_USE_NONE
    assert codes(result) == ["compression_pending"]
    assert "compress 1400 tokens into about 100" in result.report.diagnostics[0].message
    assert len(result.messages) == 5


def test_entry_limit_is_reported():
    snap = decide.Snapshot(
        budget=snapshot([], 1000).budget, summary=None, entries=(entry("e1"),), more_entries=True
    )
    assert codes(decide.full(snap)) == ["turn_limit_reached"]
