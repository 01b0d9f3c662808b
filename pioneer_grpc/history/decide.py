"""The budget decision of a history load, from stored token counts only.

Under the threshold (80% of the budget) the stored summary and every loaded
entry go. At or over it a new summary replaces them all; when that fails, the
summary (if it fits) and the newest whole units that fit go, in order. Every
function here returns the messages and the report that explains them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from pioneer_grpc.history.budget import MAX_LOADED_ENTRIES, Budget
from pioneer_grpc.history.render import ROLE_NAMES, entry_text, summary_message, to_chat_message
from pioneer_grpc.history.tokens import MESSAGE_OVERHEAD, TOKENIZER
from pioneer_grpc.history.units import Unit, group_units
from pioneer_grpc.v1 import chat_pb2, history_pb2

# Tokens set aside for the note that closes a cut entry.
CUT_NOTE_TOKENS = 24


@dataclass(frozen=True)
class StoredSummary:
    text: str
    # Tokens of the whole summary message text ("Summary of earlier conversation:\n..."), no overhead.
    token_count: int
    covers_through_entry_id: str
    covers_through_sequence: int
    summarizer: str = ""
    model: str = ""

    @property
    def cost(self) -> int:
        return self.token_count + MESSAGE_OVERHEAD


@dataclass(frozen=True)
class Snapshot:
    """What a load read: the budget, the latest summary, the completed entries after it (oldest first)."""

    budget: Budget
    summary: StoredSummary | None
    entries: tuple[history_pb2.ConversationEntry, ...]
    # More completed entries after the summary than MAX_LOADED_ENTRIES: the oldest were not read.
    more_entries: bool = False
    model: str = ""
    summary_model: str = ""

    @cached_property
    def units(self) -> list[Unit]:
        return group_units(self.entries)

    @property
    def loaded_tokens(self) -> int:
        summary = self.summary.cost if self.summary else 0
        return summary + sum(e.token_count + MESSAGE_OVERHEAD for e in self.entries)

    @property
    def sendable_tokens(self) -> int:
        summary = self.summary.cost if self.summary else 0
        return summary + sum(u.tokens for u in self.units if not u.orphan)

    @property
    def needs_compression(self) -> bool:
        tokens = self.sendable_tokens
        return tokens > 0 and tokens >= self.budget.threshold


@dataclass
class LoadResult:
    messages: list[chat_pb2.ChatMessage]
    report: history_pb2.HistoryDecisionReport
    kept: list[history_pb2.ConversationEntry] = field(default_factory=list)


def diagnostic(code: str, message: str, entry_id: str | None = None) -> history_pb2.HistoryDiagnostic:
    found = history_pb2.HistoryDiagnostic(code=code, message=message)
    if entry_id is not None:
        found.entry_id = entry_id
    return found


def _report(snapshot: Snapshot, decision: int, summary_use: int, summarizer: str = "") -> (
    history_pb2.HistoryDecisionReport
):
    report = history_pb2.HistoryDecisionReport(
        decision=decision,  # type: ignore[arg-type]
        budget_tokens=snapshot.budget.tokens,
        threshold_tokens=snapshot.budget.threshold,
        summary_target_tokens=snapshot.budget.target,
        tokens_before=snapshot.loaded_tokens,
        entries_loaded=len(snapshot.entries),
        summary_use=summary_use,  # type: ignore[arg-type]
        summarizer=summarizer,
        tokenizer=TOKENIZER,
    )
    if snapshot.summary is not None:
        report.summary_covers_through_entry_id = snapshot.summary.covers_through_entry_id
    if snapshot.more_entries:
        report.diagnostics.append(
            diagnostic(
                "entry_limit_reached",
                f"more than {MAX_LOADED_ENTRIES} completed entries follow the summary; "
                f"only the newest {MAX_LOADED_ENTRIES} were loaded",
            )
        )
    for unit in snapshot.units:
        if unit.orphan:
            entry = unit.entries[0]
            report.diagnostics.append(
                diagnostic(
                    "orphan_tool_result_dropped",
                    f"tool result for call {entry.tool_call_id!r} does not follow its call; not sent",
                    entry.entry_id,
                )
            )
    return report


def _finish(
    report: history_pb2.HistoryDecisionReport,
    messages: list[chat_pb2.ChatMessage],
    kept: list[history_pb2.ConversationEntry],
    tokens_after: int,
    snapshot: Snapshot,
) -> LoadResult:
    report.tokens_after = tokens_after
    report.entries_kept = len(kept)
    report.entries_dropped = len(snapshot.entries) - len(kept)
    return LoadResult(messages=messages, report=report, kept=kept)


def _sendable_entries(units: Iterable[Unit]) -> list[history_pb2.ConversationEntry]:
    return [entry for unit in units if not unit.orphan for entry in unit.entries]


def full(snapshot: Snapshot, diagnostics: Sequence[history_pb2.HistoryDiagnostic] = ()) -> LoadResult:
    """The stored summary (if any) and every loaded entry but orphans."""
    use = history_pb2.SUMMARY_USE_REUSED if snapshot.summary else history_pb2.SUMMARY_USE_NONE
    report = _report(snapshot, history_pb2.HISTORY_DECISION_FULL, use)
    report.diagnostics.extend(diagnostics)
    messages = [summary_message(snapshot.summary.text)] if snapshot.summary else []
    kept = _sendable_entries(snapshot.units)
    messages.extend(to_chat_message(e) for e in kept)
    return _finish(report, messages, kept, snapshot.sendable_tokens, snapshot)


def summarized(snapshot: Snapshot, summary: StoredSummary, summarizer: str) -> LoadResult:
    """One system message: the new summary, which covers every loaded entry."""
    report = _report(
        snapshot, history_pb2.HISTORY_DECISION_SUMMARIZED, history_pb2.SUMMARY_USE_CREATED, summarizer
    )
    report.summary_covers_through_entry_id = summary.covers_through_entry_id
    return _finish(report, [summary_message(summary.text)], [], summary.cost, snapshot)


def summary_rejection(candidate_cost: int, snapshot: Snapshot) -> str | None:
    """Why a new summary (its message cost, overhead included) must not be used; None when it may."""
    limit = snapshot.budget.summary_limit
    if candidate_cost > limit:
        return (
            f"summary costs {candidate_cost} tokens, over {limit} "
            f"(1.5x the target of {snapshot.budget.target})"
        )
    replaced = snapshot.sendable_tokens
    if candidate_cost >= replaced:
        return f"summary costs {candidate_cost} tokens, not less than the {replaced} it would replace"
    return None


def _cut_entry(entry: history_pb2.ConversationEntry, available: int) -> tuple[str, int] | None:
    """(text, estimated tokens) of `entry` cut to `available` tokens, overhead included; None if nothing fits.

    Cuts by the ratio of stored tokens to characters, so the load still never
    re-tokenizes; the artifact block and tool calls are kept whole.
    """
    content_budget = available - MESSAGE_OVERHEAD - CUT_NOTE_TOKENS
    if content_budget <= 0 or entry.token_count <= 0:
        return None
    keep = len(entry.content) * content_budget // entry.token_count
    note = f"\n[cut to fit the history budget: {keep} of {len(entry.content)} characters kept]"
    cut = replace_content(entry, entry.content[:keep] + note)
    # The kept share of the characters is estimated at the same share of the tokens.
    return entry_text(cut), content_budget + CUT_NOTE_TOKENS + MESSAGE_OVERHEAD


def replace_content(entry: history_pb2.ConversationEntry, content: str) -> history_pb2.ConversationEntry:
    copy = history_pb2.ConversationEntry()
    copy.CopyFrom(entry)
    copy.content = content
    return copy


def truncated(
    snapshot: Snapshot,
    summary_use: int,
    summarizer: str = "",
    diagnostics: Sequence[history_pb2.HistoryDiagnostic] = (),
    decision: int = history_pb2.HISTORY_DECISION_TRUNCATED,
) -> LoadResult:
    """The summary if it fits, then the newest units that fit, oldest first.

    Stops at the first unit that does not fit (as the original does). When even
    the newest unit does not fit, its largest entry is cut to fit instead of
    sending nothing, with an `entry_truncated` diagnostic.
    """
    report = _report(snapshot, decision, summary_use, summarizer)
    report.diagnostics.extend(diagnostics)
    remaining = snapshot.budget.tokens
    head: list[chat_pb2.ChatMessage] = []
    if snapshot.summary is not None:
        if snapshot.summary.cost <= remaining:
            head.append(summary_message(snapshot.summary.text))
            remaining -= snapshot.summary.cost
        else:
            report.diagnostics.append(
                diagnostic(
                    "summary_dropped", f"the stored summary ({snapshot.summary.cost} tokens) does not fit"
                )
            )
    picked: list[tuple[Unit, dict[str, str]]] = []
    for unit in reversed([u for u in snapshot.units if not u.orphan]):
        if unit.tokens <= remaining:
            picked.append((unit, {}))
            remaining -= unit.tokens
            continue
        if not picked:
            cut = _cut_unit(unit, remaining)
            if cut is not None:
                cut_texts, cost, cut_entry = cut
                report.diagnostics.append(
                    diagnostic(
                        "entry_truncated",
                        f"{ROLE_NAMES[cut_entry.role]} entry of {cut_entry.token_count} tokens does not fit "
                        f"the {remaining} tokens the budget leaves; its text was cut to fit",
                        cut_entry.entry_id,
                    )
                )
                picked.append((unit, cut_texts))
                remaining -= cost
        elif unit.is_tool_pair:
            report.diagnostics.append(
                diagnostic(
                    "tool_pair_kept",
                    f"the tool call and its {len(unit.entries) - 1} result(s) do not fit together; "
                    "dropped together rather than split",
                    unit.entries[0].entry_id,
                )
            )
        break
    picked.reverse()
    messages = list(head)
    kept: list[history_pb2.ConversationEntry] = []
    for unit, cut_texts in picked:
        for entry in unit.entries:
            messages.append(to_chat_message(entry, cut_texts.get(entry.entry_id)))
            kept.append(entry)
    return _finish(report, messages, kept, snapshot.budget.tokens - remaining, snapshot)


def _cut_unit(unit: Unit, available: int) -> tuple[dict[str, str], int, history_pb2.ConversationEntry] | None:
    """The unit with its largest entry cut so the whole unit fits `available`."""
    largest = max(unit.entries, key=lambda e: e.token_count)
    others = unit.tokens - (largest.token_count + MESSAGE_OVERHEAD)
    cut = _cut_entry(largest, available - others)
    if cut is None:
        return None
    text, cost = cut
    return {largest.entry_id: text}, cost + others, largest


def pending(snapshot: Snapshot, summarizer: str) -> LoadResult:
    """A dry run over the threshold: the next load compresses; shows the fallback it would send on failure."""
    note = diagnostic(
        "compression_pending",
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

