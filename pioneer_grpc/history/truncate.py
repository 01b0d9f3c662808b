"""Truncation: the stored summary if it fits, then the newest whole turns that fit, oldest first.

A turn runs from a user entry to the next one, so a truncated history never
starts on an assistant reply whose question was dropped, nor on a tool result.
The walk stops at the first turn that does not fit (as the original stops at
its first entry that does not fit). When even the newest turn does not fit, it
is cut: its request (the leading user entries) and then its newest units that
fit, with a `turn_cut` diagnostic; a request or unit larger than everything
left has its text cut (`entry_truncated`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pioneer_grpc.history import diagnostics as codes
from pioneer_grpc.history.diagnostics import diagnostic
from pioneer_grpc.history.render import ROLE_NAMES, entry_text, summary_message, to_chat_message
from pioneer_grpc.history.snapshot import LoadResult, Snapshot, finish, report_for
from pioneer_grpc.history.tokens import MESSAGE_OVERHEAD
from pioneer_grpc.history.units import Unit
from pioneer_grpc.v1 import chat_pb2, history_pb2

# Tokens set aside for the note that closes a cut entry.
CUT_NOTE_TOKENS = 24

# Units picked, with the cut text of any entry that was cut (entry_id -> text).
Picked = list[tuple[Unit, dict[str, str]]]


@dataclass(frozen=True)
class Turn:
    units: tuple[Unit, ...]

    @property
    def tokens(self) -> int:
        return sum(unit.tokens for unit in self.units)


def group_turns(units: Sequence[Unit]) -> list[Turn]:
    """Consecutive units, a new turn at each user entry."""
    turns: list[list[Unit]] = []
    for unit in units:
        if not turns or unit.entries[0].role == history_pb2.ENTRY_ROLE_USER:
            turns.append([])
        turns[-1].append(unit)
    return [Turn(tuple(units)) for units in turns]


def _cut_entry(
    entry: history_pb2.ConversationEntry, available: int, attached: int = 0
) -> tuple[str, int] | None:
    """(text, estimated tokens) of `entry` cut to `available` tokens, overhead included; None if nothing fits.

    Cuts by the ratio of stored tokens to characters, so the load still never
    re-tokenizes; the artifact block and tool calls are kept whole, and so are the
    `attached` tokens of the images and documents its refs attach.
    """
    content_budget = available - MESSAGE_OVERHEAD - CUT_NOTE_TOKENS - attached
    text_tokens = entry.token_count - attached
    if content_budget <= 0 or text_tokens <= 0:
        return None
    keep = len(entry.content) * content_budget // text_tokens
    note = f"\n[cut to fit the history budget: {keep} of {len(entry.content)} characters kept]"
    cut = replace_content(entry, entry.content[:keep] + note)
    # The kept share of the characters is estimated at the same share of the tokens.
    return entry_text(cut), content_budget + CUT_NOTE_TOKENS + MESSAGE_OVERHEAD + attached


def replace_content(entry: history_pb2.ConversationEntry, content: str) -> history_pb2.ConversationEntry:
    copy = history_pb2.ConversationEntry()
    copy.CopyFrom(entry)
    copy.content = content
    return copy


def _cut_unit(
    unit: Unit, available: int, report: history_pb2.HistoryDecisionReport, attached: Mapping[str, int]
) -> tuple[dict[str, str], int] | None:
    """The unit with its largest entry cut so the whole unit fits `available` (with a diagnostic)."""
    largest = max(unit.entries, key=lambda e: e.token_count)
    others = unit.tokens - (largest.token_count + MESSAGE_OVERHEAD)
    cut = _cut_entry(largest, available - others, attached.get(largest.entry_id, 0))
    if cut is None:
        return None
    text, cost = cut
    report.diagnostics.append(
        diagnostic(
            codes.ENTRY_TRUNCATED,
            f"{ROLE_NAMES[largest.role]} entry of {largest.token_count} tokens does not fit "
            f"the {available} tokens the budget leaves; its text was cut to fit",
            largest.entry_id,
        )
    )
    return {largest.entry_id: text}, cost + others


def _newest_units(
    units: Sequence[Unit], room: int, report: history_pb2.HistoryDecisionReport, attached: Mapping[str, int]
) -> tuple[Picked, int]:
    """The newest units that fit `room` (the newest cut when none fits whole), and their cost."""
    picked: Picked = []
    used = 0
    for unit in reversed(units):
        if unit.tokens <= room - used:
            picked.insert(0, (unit, {}))
            used += unit.tokens
            continue
        if not picked:
            cut = _cut_unit(unit, room, report, attached)
            if cut is not None:
                picked.insert(0, (unit, cut[0]))
                used += cut[1]
        elif unit.is_tool_pair:
            report.diagnostics.append(
                diagnostic(
                    codes.TOOL_PAIR_KEPT,
                    f"the tool call and its {len(unit.entries) - 1} result(s) do not fit together; "
                    "dropped together rather than split",
                    unit.entries[0].entry_id,
                )
            )
        break
    return picked, used


def _cut_turn(
    turn: Turn, available: int, report: history_pb2.HistoryDecisionReport, attached: Mapping[str, int]
) -> tuple[Picked, int]:
    """The newest turn, which does not fit whole: its request, then its newest units that fit."""
    split = 1
    while split < len(turn.units) and turn.units[split].entries[0].role == history_pb2.ENTRY_ROLE_USER:
        split += 1
    request, rest = turn.units[:split], turn.units[split:]
    head_cost = sum(unit.tokens for unit in request)
    if head_cost > available:
        picked, used = _newest_units(request, available, report, attached)
        return picked, used
    picked, used = _newest_units(rest, available - head_cost, report, attached)
    if len(picked) < len(rest):
        dropped = sum(len(unit.entries) for unit in rest[: len(rest) - len(picked)])
        report.diagnostics.append(
            diagnostic(
                codes.TURN_CUT,
                f"the newest turn ({turn.tokens} tokens) does not fit the {available} tokens left; "
                f"sent its request and its newest entries, {dropped} older entries of it dropped",
                turn.units[0].entries[0].entry_id,
            )
        )
    return [(unit, {}) for unit in request] + picked, head_cost + used


def _summary_head(
    snapshot: Snapshot, report: history_pb2.HistoryDecisionReport
) -> tuple[list[chat_pb2.ChatMessage], int]:
    if snapshot.summary is None or not snapshot.summary.sent:
        return [], 0
    if snapshot.summary.cost <= snapshot.budget.tokens:
        return [summary_message(snapshot.summary.text)], snapshot.summary.cost
    report.diagnostics.append(
        diagnostic(codes.SUMMARY_DROPPED, f"the stored summary ({snapshot.summary.cost} tokens) does not fit")
    )
    return [], 0


def picked_turns(
    snapshot: Snapshot, report: history_pb2.HistoryDecisionReport, remaining: int
) -> tuple[Picked, int]:
    """The newest whole turns that fit `remaining` (the newest cut when none fits), and what is left."""
    picked: Picked = []
    for turn in reversed(group_turns([u for u in snapshot.units if not u.orphan])):
        if turn.tokens <= remaining:
            picked[:0] = [(unit, {}) for unit in turn.units]
            remaining -= turn.tokens
            continue
        if not picked:
            picked, cost = _cut_turn(turn, remaining, report, snapshot.attached_tokens)
            remaining -= cost
        break
    return picked, remaining


def truncated(
    snapshot: Snapshot,
    summary_use: int,
    summarizer: str = "",
    diagnostics: Sequence[history_pb2.HistoryDiagnostic] = (),
    decision: int = history_pb2.HISTORY_DECISION_TRUNCATED,
) -> LoadResult:
    """The summary if it fits, then the newest whole turns that fit, oldest first."""
    report = report_for(snapshot, decision, summary_use, summarizer)
    report.diagnostics.extend(diagnostics)
    messages, used = _summary_head(snapshot, report)
    picked, remaining = picked_turns(snapshot, report, snapshot.budget.tokens - used)
    kept: list[history_pb2.ConversationEntry] = []
    for unit, cut_texts in picked:
        for entry in unit.entries:
            messages.append(to_chat_message(entry, cut_texts.get(entry.entry_id)))
            kept.append(entry)
    return finish(report, messages, kept, snapshot.budget.tokens - remaining, snapshot)


def pending(snapshot: Snapshot, summarizer: str) -> LoadResult:
    """A dry run over the threshold: the next load compresses; shows the fallback it would send on failure."""
    note = diagnostic(
        codes.COMPRESSION_PENDING,
        f"dry run: the next load asks {summarizer or 'the summarizer'} to compress "
        f"{snapshot.sendable_tokens} tokens into about {snapshot.budget.target}; "
        "the messages shown are what it would send if that failed",
    )
    return truncated(
        snapshot,
        history_pb2.SUMMARY_USE_NONE,
        summarizer,
        [note],
        decision=history_pb2.HISTORY_DECISION_SUMMARIZED,
    )
