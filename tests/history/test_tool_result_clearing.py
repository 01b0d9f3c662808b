"""Clearing old tool results before any summary: which results, their placeholders, the tokens saved,
and what a load reports (clearing.py, snapshot.py)."""

from __future__ import annotations

from pioneer_grpc.history import diagnostics as codes
from pioneer_grpc.history.budget import Budget
from pioneer_grpc.history.clearing import (
    DEFAULT_KEEP_TOOL_RESULTS,
    DEFAULT_STRATEGY,
    Cleared,
    candidates,
    compaction_violations,
    effective_keep,
    effective_strategy,
    placeholder,
    placeholder_text,
    placeholder_texts,
    replay,
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


def turns(count: int, tokens: int = 500) -> list[history_pb2.ConversationEntry]:
    """`count` turns of a user request, a call and its result of `tokens` tokens, and an answer."""
    out = []
    for i in range(count):
        out += [
            entry(f"u{i}", USER, tokens=10, turn=f"t{i}"),
            entry(f"a{i}", ASSISTANT, tokens=10, calls=(f"c{i}",), turn=f"t{i}"),
            result(f"r{i}", f"c{i}", tokens),
            entry(f"f{i}", ASSISTANT, tokens=10, turn=f"t{i}"),
        ]
        out[-2].turn_id = f"t{i}"
    return out


# Budget 10,000: threshold 8,000 (80%), low water 4,000 (40%), clearing must free 2,000 (20%).
BUDGET = Budget(10_000, low_water_percent=40, clear_at_least_percent=20)
PLACEHOLDERS = {f"r{i}": 40 for i in range(100)}


def replayed(entries, keep: int = 3, placeholders=PLACEHOLDERS, budget: Budget = BUDGET) -> Cleared:
    return replay(Snapshot(budget=budget, summary=None, entries=tuple(entries)), keep, placeholders)


def test_under_the_threshold_nothing_is_cleared():
    entries = turns(14)  # 14 x 546 = 7,644 tokens
    found = replayed(entries)
    assert not found.insufficient
    assert found.snapshot.cleared == ()


def test_at_the_threshold_the_oldest_results_are_cleared_down_to_the_low_water_mark():
    entries = turns(15)  # 8,190 tokens: the 15th turn reaches the threshold
    before = Snapshot(budget=BUDGET, summary=None, entries=tuple(entries))
    found = replayed(entries)
    after = found.snapshot
    assert not found.insufficient
    # Each clearing saves 460; 8,190 - 9 x 460 = 4,050 > 4,000, so ten go (never the newest three).
    assert [c.entry_id for c in after.cleared] == [f"r{i}" for i in range(10)]
    assert (after.cleared[0].tokens_before, after.cleared[0].tokens_after) == (500, 40)
    assert after.sendable_tokens == before.sendable_tokens - 10 * 460
    assert after.tokens_before_clearing == before.loaded_tokens
    assert saved(after) == 4600
    by_id = {e.entry_id: e for e in after.entries}
    assert by_id["r0"].content.startswith("[Result cleared")
    assert by_id["r10"].content == "x" * 500


def test_the_history_then_grows_byte_for_byte_until_the_threshold_again():
    # Every read of the grown history clears exactly what the first clearing did, until the next
    # one: the kept turns' bytes never change in between.
    first = replayed(turns(15)).snapshot
    for count in range(16, 24):
        grown = replayed(turns(count)).snapshot
        assert grown.entries[: len(first.entries)] == first.entries, count
        assert [c.entry_id for c in grown.cleared] == [c.entry_id for c in first.cleared]
    # 3,590 + 8 x 546 = 7,958; at 24 turns 8,504 reaches it again: the next chunk goes.
    later = replayed(turns(24)).snapshot
    assert len(later.cleared) == 20
    assert later.entries[:20] == first.entries[:20]


def test_clearing_that_frees_too_little_or_not_enough_is_insufficient():
    # Results of 50 tokens: clearing saves 10 each, never the 2,000 it must free.
    small = turns(160, tokens=50)
    found = replayed(small)
    assert found.insufficient
    # Clearing 2,000 and more but not under the threshold: insufficient too.
    entries = turns(15)
    assert replayed(entries, keep=14).insufficient
    assert not replayed(entries, keep=3).insufficient


def test_a_result_the_placeholder_would_not_shrink_is_kept():
    entries = turns(15)
    placeholders = {**PLACEHOLDERS, "r0": 500, "r1": 600}
    found = replayed(entries, placeholders=placeholders)
    ids = [c.entry_id for c in found.snapshot.cleared]
    assert ids[:2] == ["r2", "r3"] and "r0" not in ids and "r1" not in ids
    attached = Snapshot(budget=BUDGET, summary=None, entries=tuple(entries), attached_tokens={"r2": 470})
    # r2: 40 + 470 attached >= 500: not cleared.
    assert "r2" not in [c.entry_id for c in replay(attached, 3, PLACEHOLDERS).snapshot.cleared]


def test_a_full_load_after_clearing_reports_the_cleared_results():
    entries = turns(15)
    cleared = replayed(entries).snapshot
    loaded = full(cleared)
    report = loaded.report
    assert report.decision == history_pb2.HISTORY_DECISION_CLEARED
    assert [c.entry_id for c in report.cleared_tool_results] == [f"r{i}" for i in range(10)]
    assert report.cleared_tokens_saved == 10 * 460
    assert report.tokens_before == Snapshot(budget=BUDGET, summary=None, entries=tuple(entries)).loaded_tokens
    assert report.tokens_after == cleared.sendable_tokens
    assert report.entries_kept == report.entries_loaded == 60
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
    assert report.low_water_tokens == 300
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
