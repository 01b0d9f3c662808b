"""What a load read (the snapshot), and the decisions that send it whole or as one summary."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from pioneer_grpc.history import diagnostics as codes
from pioneer_grpc.history.budget import LOW_WATER_TURNS, MAX_LOADED_TURNS, Budget
from pioneer_grpc.history.diagnostics import diagnostic
from pioneer_grpc.history.render import summary_message, to_chat_message
from pioneer_grpc.history.repair import repair
from pioneer_grpc.history.tokens import MESSAGE_OVERHEAD, TOKENIZER
from pioneer_grpc.history.units import Unit, group_units
from pioneer_grpc.v1 import chat_pb2, history_pb2


@dataclass(frozen=True)
class StoredSummary:
    text: str
    # Tokens of the whole summary message text ("Summary of earlier conversation:\n..."), no overhead.
    token_count: int
    covers_through_entry_id: str
    covers_through_sequence: int
    summarizer: str = ""
    model: str = ""
    # The tokenizer of token_count.
    tokenizer: str = ""

    @property
    def sent(self) -> bool:
        """Whether it is a message: a truncation stores a mark with no text (the covered entries are
        left out, nothing stands for them)."""
        return bool(self.text)

    @property
    def cost(self) -> int:
        return self.token_count + MESSAGE_OVERHEAD if self.sent else 0


@dataclass(frozen=True)
class Snapshot:
    """What a load read: the budget, the latest summary, the completed entries after it (oldest first)."""

    budget: Budget
    summary: StoredSummary | None
    entries: tuple[history_pb2.ConversationEntry, ...]
    # More completed turns after the summary than MAX_LOADED_TURNS: the oldest were not read.
    more_entries: bool = False
    model: str = ""
    summary_model: str = ""
    # What `read` repaired (history/repair.py), as diagnostics.
    repairs: tuple[history_pb2.HistoryDiagnostic, ...] = ()
    # Entries read before repair (None: len(entries)).
    read_count: int | None = None
    # The newest entry read (id, sequence): what a summary of this snapshot covers through.
    newest: tuple[str, int] | None = None
    # Tool results `clearing.replay` replaced by a placeholder, and the load's tokens before it.
    cleared: tuple[history_pb2.ClearedToolResult, ...] = ()
    tokens_before_clearing: int | None = None
    strategy: int = history_pb2.COMPACTION_STRATEGY_CLEAR_THEN_SUMMARIZE
    keep_tool_results: int = 3
    # The newest entry sequence a failed compaction covered (not retried until the history grows).
    failed_sequence: int | None = None
    # The tokenizer of every count above, whether it is exact, whether the registry knows the model.
    tokenizer: str = TOKENIZER
    tokens_exact: bool = True
    model_known: bool = False
    # Images and documents counted with an assumed size (models/attachments.py), one per ref.
    attachment_notes: tuple[history_pb2.HistoryDiagnostic, ...] = ()
    # entry_id -> tokens of the images and documents included in its token_count.
    attached_tokens: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def read(
        cls,
        budget: Budget,
        summary: StoredSummary | None,
        entries: Sequence[history_pb2.ConversationEntry],
        **settings: object,
    ) -> Snapshot:
        """The snapshot of what a load read, repaired so that every provider accepts it."""
        repaired = repair(entries)
        newest = (entries[-1].entry_id, entries[-1].sequence) if entries else None
        return cls(
            budget=budget,
            summary=summary,
            entries=tuple(repaired.entries),
            repairs=tuple(repaired.diagnostics),
            read_count=len(entries),
            newest=newest,
            **settings,  # type: ignore[arg-type]
        )

    @property
    def loaded_count(self) -> int:
        return len(self.entries) if self.read_count is None else self.read_count

    @property
    def covers_through(self) -> tuple[str, int]:
        """The newest entry a summary of this snapshot covers: its last entry read, else the old summary's."""
        if self.newest is not None:
            return self.newest
        if self.entries:
            return self.entries[-1].entry_id, self.entries[-1].sequence
        if self.summary is not None:
            return self.summary.covers_through_entry_id, self.summary.covers_through_sequence
        return "", 0

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

    @cached_property
    def turn_count(self) -> int:
        """Turns among the entries read (MAX_LOADED_TURNS at most, but when the read is over it)."""
        return len({entry.turn_id for entry in self.entries})

    @property
    def at_turn_cap(self) -> bool:
        """The read reached MAX_LOADED_TURNS turns after the summary: compaction starts, as it does
        at the threshold, so the oldest turns leave in one chunk rather than one a turn."""
        return self.more_entries or self.turn_count >= MAX_LOADED_TURNS

    @property
    def needs_compression(self) -> bool:
        tokens = self.sendable_tokens
        return (tokens > 0 and tokens >= self.budget.threshold) or self.at_turn_cap


@dataclass
class LoadResult:
    messages: list[chat_pb2.ChatMessage]
    report: history_pb2.HistoryDecisionReport
    kept: list[history_pb2.ConversationEntry] = field(default_factory=list)


def turn_limit_note() -> history_pb2.HistoryDiagnostic:
    """The first diagnostic of a load that read the newest MAX_LOADED_TURNS turns only."""
    return diagnostic(
        codes.TURN_LIMIT_REACHED,
        f"more than {MAX_LOADED_TURNS} completed turns follow the summary; "
        f"only the newest {MAX_LOADED_TURNS} were loaded",
    )


def report_for(
    snapshot: Snapshot, decision: int, summary_use: int, summarizer: str = ""
) -> history_pb2.HistoryDecisionReport:
    report = history_pb2.HistoryDecisionReport(
        decision=decision,  # type: ignore[arg-type]
        budget_tokens=snapshot.budget.tokens,
        threshold_tokens=snapshot.budget.threshold,
        low_water_tokens=snapshot.budget.low_water,
        summary_target_tokens=snapshot.budget.target,
        tokens_before=(
            snapshot.loaded_tokens
            if snapshot.tokens_before_clearing is None
            else snapshot.tokens_before_clearing
        ),
        entries_loaded=snapshot.loaded_count,
        summary_use=summary_use,  # type: ignore[arg-type]
        summarizer=summarizer,
        tokenizer=snapshot.tokenizer,
        token_counts_exact=snapshot.tokens_exact,
        model_known=snapshot.model_known,
        compaction_strategy=snapshot.strategy,  # type: ignore[arg-type]
    )
    if snapshot.summary is not None:
        report.summary_covers_through_entry_id = snapshot.summary.covers_through_entry_id
    if snapshot.more_entries:
        report.diagnostics.append(turn_limit_note())
    report.diagnostics.extend(snapshot.repairs)
    report.diagnostics.extend(snapshot.attachment_notes)
    for unit in snapshot.units:
        if unit.orphan:
            entry = unit.entries[0]
            report.diagnostics.append(
                diagnostic(
                    codes.ORPHAN_TOOL_RESULT_DROPPED,
                    f"tool result for call {entry.tool_call_id!r} does not follow its call; not sent",
                    entry.entry_id,
                )
            )
    return report


def finish(
    report: history_pb2.HistoryDecisionReport,
    messages: list[chat_pb2.ChatMessage],
    kept: list[history_pb2.ConversationEntry],
    tokens_after: int,
    snapshot: Snapshot,
) -> LoadResult:
    """Sets the counts; synthesized entries (no entry_id) are sent but not counted as kept."""
    report.tokens_after = tokens_after
    report.entries_kept = sum(1 for e in kept if e.entry_id)
    report.entries_dropped = snapshot.loaded_count - report.entries_kept
    kept_ids = {e.entry_id for e in kept}
    for item in snapshot.cleared:
        if item.entry_id in kept_ids:
            report.cleared_tool_results.append(item)
            report.cleared_tokens_saved += item.tokens_before - item.tokens_after
    return LoadResult(messages=messages, report=report, kept=kept)


def _sendable_entries(units: Iterable[Unit]) -> list[history_pb2.ConversationEntry]:
    return [entry for unit in units if not unit.orphan for entry in unit.entries]


def full(snapshot: Snapshot, diagnostics: Sequence[history_pb2.HistoryDiagnostic] = ()) -> LoadResult:
    """The stored summary (if any) and every loaded entry but orphans (cleared results as placeholders)."""
    sent = snapshot.summary is not None and snapshot.summary.sent
    use = history_pb2.SUMMARY_USE_REUSED if sent else history_pb2.SUMMARY_USE_NONE
    decision = history_pb2.HISTORY_DECISION_CLEARED if snapshot.cleared else history_pb2.HISTORY_DECISION_FULL
    report = report_for(snapshot, decision, use)
    report.diagnostics.extend(diagnostics)
    messages = [summary_message(snapshot.summary.text)] if snapshot.summary is not None and sent else []
    kept = _sendable_entries(snapshot.units)
    messages.extend(to_chat_message(e) for e in kept)
    return finish(report, messages, kept, snapshot.sendable_tokens, snapshot)


@dataclass(frozen=True)
class Split:
    """Where a compaction cuts the history: the units it summarizes (or leaves out), and the newest
    whole turns it keeps as they are, which fit under the low-water mark beside the summary."""

    older: tuple[Unit, ...]
    kept: tuple[Unit, ...]

    @property
    def older_entries(self) -> list[history_pb2.ConversationEntry]:
        return _sendable_entries(self.older)

    @property
    def kept_entries(self) -> list[history_pb2.ConversationEntry]:
        return _sendable_entries(self.kept)

    @property
    def older_tokens(self) -> int:
        return sum(unit.tokens for unit in self.older if not unit.orphan)

    @property
    def kept_tokens(self) -> int:
        return sum(unit.tokens for unit in self.kept if not unit.orphan)


def split(snapshot: Snapshot, head_tokens: int) -> Split:
    """The newest whole turns that fit under the low-water mark with `head_tokens` before them (the
    summary that will stand for the rest) and are at most LOW_WATER_TURNS; the rest is older.
    A turn starts at a user entry; the kept part never starts on a tool result."""
    units = snapshot.units
    room = snapshot.budget.low_water - head_tokens
    starts = [i for i, unit in enumerate(units) if unit.entries[0].role == history_pb2.ENTRY_ROLE_USER]
    cut, used, turns = len(units), 0, 0
    for start in reversed(starts):
        tokens = sum(unit.tokens for unit in units[start:cut] if not unit.orphan)
        if used + tokens > room or turns == LOW_WATER_TURNS:
            break
        cut, used, turns = start, used + tokens, turns + 1
    return Split(tuple(units[:cut]), tuple(units[cut:]))


def summarized(
    snapshot: Snapshot,
    summary: StoredSummary,
    summarizer: str,
    diagnostics: Sequence[history_pb2.HistoryDiagnostic] = (),
    kept: Split | None = None,
) -> LoadResult:
    """The new summary, which covers the older part of what was loaded, then the newest whole turns
    it left as they are (`kept`; none: it covers every loaded entry)."""
    report = report_for(
        snapshot, history_pb2.HISTORY_DECISION_SUMMARIZED, history_pb2.SUMMARY_USE_CREATED, summarizer
    )
    report.diagnostics.extend(diagnostics)
    report.summary_covers_through_entry_id = summary.covers_through_entry_id
    entries = kept.kept_entries if kept is not None else []
    messages = [summary_message(summary.text)] if summary.sent else []
    messages.extend(to_chat_message(entry) for entry in entries)
    tokens = summary.cost + (kept.kept_tokens if kept is not None else 0)
    return finish(report, messages, entries, tokens, snapshot)


def summary_rejection(candidate_cost: int, snapshot: Snapshot, replaced: int | None = None) -> str | None:
    """Why a new summary (its message cost, overhead included) must not be used; None when it may.
    `replaced`: the tokens it stands for (None: everything loaded)."""
    limit = snapshot.budget.summary_limit
    if candidate_cost > limit:
        return (
            f"summary costs {candidate_cost} tokens, over {limit} "
            f"(1.5x the target of {snapshot.budget.target})"
        )
    replaced = snapshot.sendable_tokens if replaced is None else replaced
    if candidate_cost >= replaced:
        return f"summary costs {candidate_cost} tokens, not less than the {replaced} it would replace"
    return None
