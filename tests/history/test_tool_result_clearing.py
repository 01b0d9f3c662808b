"""Clearing old tool results before any summary: which results, their placeholders, the tokens saved,
and what a load reports (clearing.py, snapshot.py)."""

from __future__ import annotations

from pioneer_grpc.history import diagnostics as codes
from pioneer_grpc.history.budget import Budget
from pioneer_grpc.history.clearing import (
    DEFAULT_KEEP_TOOL_RESULTS,
    DEFAULT_STRATEGY,
    candidates,
    clear,
    compaction_violations,
    effective_keep,
    effective_strategy,
    placeholder,
    placeholder_text,
    placeholder_texts,
    saved,
)
from pioneer_grpc.history.render import entry_text
from pioneer_grpc.history.snapshot import Snapshot, StoredSummary, full, report_for, summary_rejection
from pioneer_grpc.v1 import common_pb2, history_pb2
from tests.history.builders import ASSISTANT, TOOL, USER, entry


def result(
    entry_id: str, call_id: str, tokens: int, name: str = "read_file"
) -> history_pb2.ConversationEntry:
    made = entry(entry_id, TOOL, tokens=tokens, answers=call_id, content="x" * tokens)
    made.name = name
    return made


def thread(results: int, tokens: int = 500) -> list[history_pb2.ConversationEntry]:
    """A user request, then `results` call/result pairs, each result of `tokens` tokens."""
    out = [entry("u", USER, tokens=10)]
    for i in range(results):
        out += [entry(f"a{i}", ASSISTANT, tokens=10, calls=(f"c{i}",)), result(f"r{i}", f"c{i}", tokens)]
    return out


def snap(entries, **settings) -> Snapshot:
    return Snapshot(budget=Budget(10_000), summary=None, entries=tuple(entries), **settings)


def test_strategy_and_keep_default_and_are_checked():
    assert effective_strategy(0) == DEFAULT_STRATEGY == history_pb2.COMPACTION_STRATEGY_CLEAR_THEN_SUMMARIZE
    assert effective_strategy(history_pb2.COMPACTION_STRATEGY_TRUNCATE) == (
        history_pb2.COMPACTION_STRATEGY_TRUNCATE
    )
    assert effective_keep(None) == DEFAULT_KEEP_TOOL_RESULTS == 3
    assert effective_keep(0) == 0
    assert compaction_violations(0, None) == []
    assert compaction_violations(history_pb2.COMPACTION_STRATEGY_SUMMARIZE, 0) == []
    assert compaction_violations(history_pb2.COMPACTION_STRATEGY_SUMMARIZE, 1000) == []
    found = compaction_violations(99, 1001, prefix="c.")
    assert [(v.field, v.description) for v in found] == [
        ("c.compaction_strategy", "unknown strategy 99"),
        ("c.keep_tool_results", "must be 0 to 1000, got 1001"),
    ]
    assert compaction_violations(0, -1)[0].field == "config.keep_tool_results"


def test_a_placeholder_says_what_was_cleared_and_how_to_get_it_again():
    stored = result("r1", "call_7", 1234, name="grep")
    stored.artifact_refs.append(common_pb2.ArtifactRef(artifact_id="log1"))
    assert placeholder_text(stored) == (
        "[Result cleared to save context: 1234 tokens of grep output (call call_7). "
        "Call grep again with the same arguments to see it.]"
    )
    stored.name = ""
    assert placeholder_text(stored).startswith(
        "[Result cleared to save context: 1234 tokens of the tool output"
    )
    assert "Call the tool again" in placeholder_text(stored)
    cleared = placeholder(stored)
    assert cleared.content == placeholder_text(stored)
    assert (cleared.entry_id, cleared.tool_call_id, list(cleared.artifact_refs)) == (
        "r1",
        "call_7",
        list(stored.artifact_refs),
    )
    assert stored.content == "x" * 1234


def test_every_stored_result_but_the_newest_keep_is_a_candidate():
    entries = thread(5)
    entries.append(history_pb2.ConversationEntry(role=TOOL, tool_call_id="synth", content="no id"))
    assert [e.entry_id for e in candidates(entries, 3)] == ["r0", "r1"]
    assert [e.entry_id for e in candidates(entries, 0)] == ["r0", "r1", "r2", "r3", "r4"]
    assert candidates(entries, 5) == []
    assert candidates(entries, 9) == []
    texts = placeholder_texts(entries, 4)
    assert list(texts) == ["r0"]
    assert texts["r0"] == entry_text(placeholder(entries[2]))


def test_clearing_replaces_old_results_and_records_what_it_saved():
    entries = thread(4)
    before = snap(entries)
    after = clear(before, 2, {"r0": 40, "r1": 41, "r2": 42})
    by_id = {e.entry_id: e for e in after.entries}
    assert by_id["r0"].content.startswith("[Result cleared")
    assert (by_id["r0"].token_count, by_id["r1"].token_count) == (40, 41)
    assert by_id["r2"].content == "x" * 500
    assert [e.entry_id for e in after.entries] == [e.entry_id for e in entries]
    assert [(c.entry_id, c.tool_call_id, c.name, c.tokens_before, c.tokens_after) for c in after.cleared] == [
        ("r0", "c0", "read_file", 500, 40),
        ("r1", "c1", "read_file", 500, 41),
    ]
    assert after.tokens_before_clearing == before.loaded_tokens
    assert saved(after) == 460 + 459
    assert after.loaded_tokens == before.loaded_tokens - saved(after)


def test_a_result_the_placeholder_would_not_shrink_is_kept():
    entries = thread(3, tokens=50)
    before = snap(entries, attached_tokens={"r1": 20})
    after = clear(before, 0, {"r0": 50, "r1": 30, "r2": 29})
    # r0: 50 >= 50; r1: 30 + 20 attached >= 50; r2: 29 < 50.
    assert [c.entry_id for c in after.cleared] == ["r2"]
    assert clear(before, 0, {"r0": 50}) is before
    assert clear(before, 0, {}) is before


def test_a_synthesized_result_is_left_as_it_is():
    synth = history_pb2.ConversationEntry(role=TOOL, tool_call_id="c0", content="interrupted", token_count=9)
    entries = [*thread(2), synth]
    after = clear(snap(entries), 0, {"r0": 5, "r1": 5})
    assert after.entries[-1] is synth


def test_a_full_load_after_clearing_reports_the_cleared_results():
    entries = thread(4)
    cleared = clear(snap(entries), 1, {"r0": 40, "r1": 40, "r2": 40})
    loaded = full(cleared)
    report = loaded.report
    assert report.decision == history_pb2.HISTORY_DECISION_CLEARED
    assert [c.entry_id for c in report.cleared_tool_results] == ["r0", "r1", "r2"]
    assert report.cleared_tokens_saved == 3 * 460
    assert report.tokens_before == snap(entries).loaded_tokens
    assert report.tokens_after == cleared.sendable_tokens
    assert report.entries_kept == report.entries_loaded == 9
    assert report.entries_dropped == 0
    assert loaded.messages[2].content.startswith("[Result cleared")
    assert full(snap(entries)).report.decision == history_pb2.HISTORY_DECISION_FULL


def test_a_load_report_carries_budget_summary_repairs_and_orphans():
    summary = StoredSummary(text="s", token_count=30, covers_through_entry_id="e0", covers_through_sequence=3)
    orphan = result("r9", "nope", 7)
    snapshot = Snapshot.read(
        Budget(1000),
        summary,
        [entry("u", USER), entry("e", USER, content=" "), orphan],
        more_entries=True,
        tokenizer="o200k_base",
        tokens_exact=False,
        model_known=True,
    )
    report = report_for(snapshot, history_pb2.HISTORY_DECISION_FULL, history_pb2.SUMMARY_USE_REUSED, "x")
    assert (report.budget_tokens, report.threshold_tokens, report.summary_target_tokens) == (1000, 800, 100)
    assert report.entries_loaded == 3
    assert report.summary_covers_through_entry_id == "e0"
    assert (report.summarizer, report.tokenizer, report.token_counts_exact, report.model_known) == (
        "x",
        "o200k_base",
        False,
        True,
    )
    assert report.tokens_before == 30 + 4 + 10 + 4
    assert [(d.code, d.entry_id) for d in report.diagnostics] == [
        (codes.TURN_LIMIT_REACHED, ""),
        (codes.EMPTY_ENTRY_SKIPPED, "e"),
        (codes.ORPHAN_TOOL_RESULT_DROPPED, "r9"),
    ]
    assert report.diagnostics[0].message == (
        "more than 200 completed turns follow the summary; only the newest 200 were loaded"
    )
    assert snapshot.covers_through == ("r9", 0)


def test_what_a_summary_covers_through_falls_back_to_the_old_summary():
    summary = StoredSummary(text="s", token_count=30, covers_through_entry_id="e0", covers_through_sequence=3)
    assert Snapshot(budget=Budget(100), summary=summary, entries=()).covers_through == ("e0", 3)
    assert Snapshot(budget=Budget(100), summary=None, entries=()).covers_through == ("", 0)
    last = entry("u", USER, sequence=8)
    assert Snapshot(budget=Budget(100), summary=summary, entries=(last,)).covers_through == ("u", 8)


def test_a_summary_is_rejected_over_its_limit_or_when_it_saves_nothing():
    snapshot = snap(thread(2, tokens=100))  # 5 entries: 10 + 10 + 100 + 10 + 100, 4 overhead each
    assert snapshot.sendable_tokens == 250
    # Budget 10,000: target 1,000, limit 1,500.
    assert summary_rejection(249, snapshot) is None
    assert (
        summary_rejection(250, snapshot) == "summary costs 250 tokens, not less than the 250 it would replace"
    )
    big = snap(thread(20, tokens=100))
    assert summary_rejection(1500, big) is None
    assert summary_rejection(1501, big) == "summary costs 1501 tokens, over 1500 (1.5x the target of 1000)"
