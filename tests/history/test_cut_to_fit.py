"""An entry too large for the budget is cut to fit: how many characters stay, what the cut costs, the
images it keeps, and what the report says (truncate.py, snapshot.py)."""

from __future__ import annotations

from pioneer_grpc.history.budget import Budget
from pioneer_grpc.history.decide import full, pending, summarized, truncated
from pioneer_grpc.history.snapshot import Snapshot, StoredSummary
from pioneer_grpc.v1 import history_pb2
from tests.history.builders import ASSISTANT, USER, entry

NONE = history_pb2.SUMMARY_USE_NONE
BIG = entry("b", USER, tokens=1000, content="w" * 4000)


def note(kept: int, of: int) -> str:
    return f"\n[cut to fit the history budget: {kept} of {of} characters kept]"


def test_an_entry_alone_is_cut_to_the_budget_less_overhead_and_note():
    loaded = truncated(Snapshot(budget=Budget(300), summary=None, entries=(BIG,)), NONE)
    # 300 - 4 (message overhead) - 24 (the note) = 272 tokens of 1000: 1,088 of 4,000 characters.
    assert loaded.messages[0].content == "w" * 1088 + note(1088, 4000)
    assert loaded.report.tokens_after == 300
    assert [(d.code, d.entry_id, d.message) for d in loaded.report.diagnostics] == [
        (
            "entry_truncated",
            "b",
            "user entry of 1000 tokens does not fit the 300 tokens the budget leaves; "
            "its text was cut to fit",
        )
    ]


def test_the_images_an_entry_attaches_are_kept_whole_and_its_text_is_cut_more():
    snapshot = Snapshot(budget=Budget(300), summary=None, entries=(BIG,), attached_tokens={"b": 100})
    loaded = truncated(snapshot, NONE)
    # 300 - 4 - 24 - 100 attached = 172 tokens of the 900 of text: 764 characters.
    assert loaded.messages[0].content == "w" * 764 + note(764, 4000)
    assert loaded.report.tokens_after == 300


def test_the_largest_entry_of_a_turn_is_cut_and_the_others_kept():
    turn = (
        entry("u", USER, tokens=50, content="q" * 200),
        entry("a", ASSISTANT, tokens=1000, content="w" * 4000),
    )
    loaded = truncated(Snapshot(budget=Budget(300), summary=None, entries=turn), NONE)
    # The user entry costs 54; 246 are left for the assistant's: 218 tokens of text, 872 characters.
    assert [m.content for m in loaded.messages] == ["q" * 200, "w" * 872 + note(872, 4000)]
    assert loaded.report.tokens_after == 300
    assert loaded.report.diagnostics[0].message.startswith(
        "assistant entry of 1000 tokens does not fit the 246"
    )


def test_nothing_is_sent_when_not_even_the_note_fits():
    loaded = truncated(Snapshot(budget=Budget(28), summary=None, entries=(BIG,)), NONE)
    assert list(loaded.messages) == []
    assert loaded.report.tokens_after == 0
    fits = truncated(Snapshot(budget=Budget(29), summary=None, entries=(BIG,)), NONE)
    assert fits.messages[0].content == "w" * 4 + note(4, 4000)


def test_a_dry_run_names_the_summarizer_that_would_compress():
    snapshot = Snapshot(budget=Budget(300), summary=None, entries=(BIG,))
    loaded = pending(snapshot, "extractive")
    assert loaded.report.summarizer == "extractive"
    assert loaded.report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED
    assert loaded.report.diagnostics[0].message == (
        "dry run: the next load asks extractive to compress 1004 tokens into about 30; "
        "the messages shown are what it would send if that failed"
    )
    assert (
        pending(snapshot, "")
        .report.diagnostics[0]
        .message.startswith("dry run: the next load asks the summarizer to compress")
    )


def test_a_new_summary_is_reported_with_its_summarizer_and_no_old_one_as_none():
    snapshot = Snapshot(budget=Budget(300), summary=None, entries=(BIG,))
    new = StoredSummary(text="x", token_count=5, covers_through_entry_id="b", covers_through_sequence=1)
    assert summarized(snapshot, new, "extractive").report.summarizer == "extractive"
    small = Snapshot(budget=Budget(3000), summary=None, entries=(BIG,))
    assert full(small).report.summary_use == history_pb2.SUMMARY_USE_NONE


def test_a_turn_too_large_sends_its_request_and_the_newest_entries_that_fit_exactly():
    turn = (
        entry("u", USER, tokens=10),
        entry("a1", ASSISTANT, tokens=100),
        entry("a2", ASSISTANT, tokens=100),
        entry("a3", ASSISTANT, tokens=100),
    )
    # The request costs 14 and each answer 104: 222 tokens hold the request and the two newest answers.
    loaded = truncated(Snapshot(budget=Budget(222), summary=None, entries=turn), NONE)
    assert [m.content for m in loaded.messages] == ["text of u", "text of a2", "text of a3"]
    assert loaded.report.tokens_after == 222
    assert [(d.code, d.entry_id) for d in loaded.report.diagnostics] == [("turn_cut", "u")]
    one_less = truncated(Snapshot(budget=Budget(221), summary=None, entries=turn), NONE)
    assert [m.content for m in one_less.messages] == ["text of u", "text of a3"]
