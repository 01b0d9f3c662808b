"""Properties of every decision over generated histories: fits the budget, never splits a tool pair."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pioneer_grpc.history import decide
from pioneer_grpc.history.units import group_units
from pioneer_grpc.v1 import chat_pb2, history_pb2
from tests.history.builders import ASSISTANT, TOOL, USER, entry, snapshot, summary

token_counts = st.integers(min_value=0, max_value=3000)


@st.composite
def histories(draw: st.DrawFn) -> list[history_pb2.ConversationEntry]:
    entries: list[history_pb2.ConversationEntry] = []
    for i in range(draw(st.integers(min_value=0, max_value=40))):
        shape = draw(st.sampled_from(["user", "assistant", "tools", "orphan"]))
        if shape == "user":
            entries.append(entry(f"u{i}", USER, draw(token_counts), content="u" * draw(st.integers(0, 500))))
        elif shape == "assistant":
            entries.append(entry(f"a{i}", ASSISTANT, draw(token_counts)))
        elif shape == "orphan":
            entries.append(entry(f"o{i}", TOOL, draw(token_counts), answers=f"missing{i}"))
        else:
            calls = tuple(f"c{i}_{j}" for j in range(draw(st.integers(1, 3))))
            entries.append(entry(f"a{i}", ASSISTANT, draw(token_counts), calls=calls))
            for call in calls:
                entries.append(entry(f"r{call}", TOOL, draw(token_counts), answers=call))
    return entries


@st.composite
def snapshots(draw: st.DrawFn) -> decide.Snapshot:
    stored = draw(st.one_of(st.none(), token_counts.map(summary)))
    return snapshot(draw(histories()), draw(st.integers(min_value=1, max_value=20_000)), stored)


def decide_with(snap: decide.Snapshot, outcome: str, candidate_cost: int) -> decide.LoadResult:
    if not snap.needs_compression:
        return decide.full(snap)
    if outcome == "pending":
        return decide.pending(snap, "extractive")
    if outcome == "success" and decide.summary_rejection(candidate_cost, snap) is None:
        new = decide.StoredSummary("s", candidate_cost - 4, "x", 1)
        return decide.summarized(snap, new, "extractive")
    return decide.truncated(snap, history_pb2.SUMMARY_USE_FAILED)


def assert_no_split_pair(snap: decide.Snapshot, messages: list[chat_pb2.ChatMessage]) -> None:
    pairs = [u for u in group_units(snap.entries) if u.is_tool_pair]
    results_of = {u.entries[0].tool_calls[0].id: len(u.entries) - 1 for u in pairs}
    body = [m for m in messages if not m.content.startswith("Summary of earlier conversation:")]
    open_calls: set[str] = set()
    for index, message in enumerate(body):
        if message.role == chat_pb2.CHAT_ROLE_TOOL:
            assert message.tool_call_id in open_calls, "a tool result without its call just before it"
            continue
        open_calls = set()
        if message.role == chat_pb2.CHAT_ROLE_ASSISTANT and message.tool_calls:
            open_calls = {c.id for c in message.tool_calls}
            expected = results_of[message.tool_calls[0].id]
            following = body[index + 1 : index + 1 + expected]
            assert len(following) == expected
            assert all(m.role == chat_pb2.CHAT_ROLE_TOOL for m in following)


@settings(max_examples=600, deadline=None)
@given(
    snapshots(),
    st.sampled_from(["success", "failure", "pending"]),
    st.integers(min_value=4, max_value=5000),
)
def test_every_decision_fits_the_budget_and_keeps_tool_pairs_whole(
    snap: decide.Snapshot, outcome: str, candidate_cost: int
) -> None:
    result = decide_with(snap, outcome, candidate_cost)
    report = result.report
    assert report.tokens_after <= snap.budget.tokens
    assert report.entries_kept + report.entries_dropped == report.entries_loaded == len(snap.entries)
    assert_no_split_pair(snap, result.messages)
    if result.messages and result.messages[0].role != chat_pb2.CHAT_ROLE_SYSTEM:
        assert result.messages[0].role != chat_pb2.CHAT_ROLE_TOOL
    if report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED and outcome == "success":
        assert len(result.messages) == 1
        assert report.tokens_after <= snap.budget.summary_limit


@settings(max_examples=300, deadline=None)
@given(snapshots())
def test_tokens_after_is_the_sum_of_what_is_sent_when_nothing_is_cut(snap: decide.Snapshot) -> None:
    result = decide.truncated(snap, history_pb2.SUMMARY_USE_FAILED)
    if "entry_truncated" in [d.code for d in result.report.diagnostics]:
        return
    kept_tokens = sum(e.token_count + 4 for e in result.kept)
    summary_tokens = (
        snap.summary.cost
        if snap.summary and result.messages[:1] and (result.messages[0].role == chat_pb2.CHAT_ROLE_SYSTEM)
        else 0
    )
    assert result.report.tokens_after == kept_tokens + summary_tokens
