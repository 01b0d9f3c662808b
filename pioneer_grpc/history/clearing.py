"""Clearing old tool results: the first step of compaction, before any summary.

Tool results are the bulk of an agent's history and the part a model needs
least once it has acted on them. A cleared result is replaced by a short
placeholder that keeps the call/result pair valid and says how to get the
content again (call the tool again). A result no larger than its placeholder is
left as it is; the newest `keep_tool_results` (default 3) are never cleared.

Clearing rewrites the history from the first result it clears on, and the
provider's prompt cache serves nothing after that point: it happens in chunks,
with hysteresis (the idea of Anthropic's context editing, `clear_at_least`).
When the history reaches the threshold, the oldest results are cleared until it
is down to the low-water mark; the history then grows, byte for byte the same,
until it reaches the threshold again. A clearing that would free less than the
budget's `clear_at_least` or leave the history at the threshold is not worth
its cache break: the history is summarized instead (`Cleared.insufficient`).

Nothing stored changes: `replay` is a pure function of what a load read. It
walks the read turn by turn as the rounds saw it grow, so the history cleared
when a load finds it is the one every earlier load found, extended: the same
history clears the same results on every load, and a turn appended later
changes nothing before it (history_current.py extends a cleared history).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pioneer_grpc.errors import FieldViolation
from pioneer_grpc.history.render import entry_text
from pioneer_grpc.history.snapshot import Snapshot
from pioneer_grpc.history.units import Unit
from pioneer_grpc.v1 import history_pb2

DEFAULT_KEEP_TOOL_RESULTS = 3
MAX_KEEP_TOOL_RESULTS = 1000
DEFAULT_STRATEGY = history_pb2.COMPACTION_STRATEGY_CLEAR_THEN_SUMMARIZE
STRATEGY_NAMES = {
    history_pb2.COMPACTION_STRATEGY_CLEAR_THEN_SUMMARIZE: "clear-then-summarize",
    history_pb2.COMPACTION_STRATEGY_SUMMARIZE: "summarize",
    history_pb2.COMPACTION_STRATEGY_TRUNCATE: "truncate",
}


def effective_strategy(value: int) -> int:
    return value or DEFAULT_STRATEGY


def effective_keep(value: int | None) -> int:
    return DEFAULT_KEEP_TOOL_RESULTS if value is None else value


def compaction_violations(strategy: int, keep: int | None, prefix: str = "config.") -> list[FieldViolation]:
    violations: list[FieldViolation] = []
    if strategy and strategy not in STRATEGY_NAMES:
        violations.append(FieldViolation(f"{prefix}compaction_strategy", f"unknown strategy {strategy}"))
    if keep is not None and not 0 <= keep <= MAX_KEEP_TOOL_RESULTS:
        violations.append(
            FieldViolation(f"{prefix}keep_tool_results", f"must be 0 to {MAX_KEEP_TOOL_RESULTS}, got {keep}")
        )
    return violations


def placeholder_text(entry: history_pb2.ConversationEntry) -> str:
    name = entry.name or "the tool"
    return (
        f"[Result cleared to save context: {entry.token_count} tokens of {name} output "
        f"(call {entry.tool_call_id}). Call {name} again with the same arguments to see it.]"
    )


def placeholder(entry: history_pb2.ConversationEntry) -> history_pb2.ConversationEntry:
    """The cleared result: same call, same artifact refs, the placeholder as its text."""
    cleared = history_pb2.ConversationEntry()
    cleared.CopyFrom(entry)
    cleared.content = placeholder_text(entry)
    return cleared


def candidates(
    entries: Sequence[history_pb2.ConversationEntry], keep: int
) -> list[history_pb2.ConversationEntry]:
    """Stored tool results older than the newest `keep`, oldest first."""
    results = [e for e in entries if e.role == history_pb2.ENTRY_ROLE_TOOL and e.entry_id]
    return results[: max(0, len(results) - keep)]


def placeholder_texts(entries: Sequence[history_pb2.ConversationEntry], keep: int) -> dict[str, str]:
    """entry_id -> the text whose tokens the placeholder costs (what the service counts)."""
    return {e.entry_id: entry_text(placeholder(e)) for e in candidates(entries, keep)}


def cleared_one(
    entry: history_pb2.ConversationEntry, placeholder_tokens: int, attached_tokens: Mapping[str, int]
) -> tuple[history_pb2.ConversationEntry, history_pb2.ClearedToolResult] | None:
    """The candidate as cleared and what the report says of it; None when clearing saves nothing."""
    tokens = placeholder_tokens + attached_tokens.get(entry.entry_id, 0)
    if tokens >= entry.token_count:
        return None
    new = placeholder(entry)
    new.token_count = tokens
    item = history_pb2.ClearedToolResult(
        entry_id=entry.entry_id,
        tool_call_id=entry.tool_call_id,
        name=entry.name,
        tokens_before=entry.token_count,
        tokens_after=tokens,
    )
    return new, item


@dataclass(frozen=True)
class Cleared:
    """What `replay` made of a read: the snapshot with the results it cleared (the snapshot itself
    when none), and whether at some turn clearing was not enough and the history needs a summary."""

    snapshot: Snapshot
    insufficient: bool


def replay(snapshot: Snapshot, keep: int, placeholder_tokens: Mapping[str, int]) -> Cleared:
    """The read's history as clearing left it, turn after turn (the module's doc).

    `placeholder_tokens`: entry_id -> what its placeholder costs, for every `candidates` result.
    At each turn that brings the history to the threshold, the oldest results not cleared yet
    (never the newest `keep` seen so far) are cleared until it is at the low-water mark.
    """
    budget = snapshot.budget
    total = snapshot.summary.cost if snapshot.summary is not None else 0
    results: list[history_pb2.ConversationEntry] = []
    replaced: dict[str, history_pb2.ConversationEntry] = {}
    items: list[history_pb2.ClearedToolResult] = []
    start = 0  # results[:start] were cleared, or could not be
    for turn in _turns(snapshot.units):
        total += sum(unit.tokens for unit in turn if not unit.orphan)
        results.extend(e for unit in turn for e in unit.entries if e.role == ROLE_TOOL and e.entry_id)
        if total < budget.threshold or total <= 0:
            continue
        freed, chunk, position = 0, [], start
        while position < len(results) - keep and total - freed > budget.low_water:
            entry = results[position]
            position += 1
            tokens = placeholder_tokens.get(entry.entry_id)
            found = None if tokens is None else cleared_one(entry, tokens, snapshot.attached_tokens)
            if found is not None:
                chunk.append(found)
                freed += found[1].tokens_before - found[1].tokens_after
        if freed < budget.clear_at_least or total - freed >= budget.threshold:
            return Cleared(_with(snapshot, replaced, items), insufficient=True)
        for new, item in chunk:
            replaced[item.entry_id] = new
            items.append(item)
        total -= freed
        start = position
    return Cleared(_with(snapshot, replaced, items), insufficient=False)


ROLE_TOOL = history_pb2.ENTRY_ROLE_TOOL


def _turns(units: Sequence[Unit]) -> list[list[Unit]]:
    """The units turn by turn (a turn starts at a user entry), as rounds saw the history grow."""
    turns: list[list[Unit]] = []
    for unit in units:
        if not turns or unit.entries[0].role == history_pb2.ENTRY_ROLE_USER:
            turns.append([])
        turns[-1].append(unit)
    return turns


def _with(
    snapshot: Snapshot,
    replaced: Mapping[str, history_pb2.ConversationEntry],
    items: Sequence[history_pb2.ClearedToolResult],
) -> Snapshot:
    if not items:
        return snapshot
    return dataclasses.replace(
        snapshot,
        entries=tuple(replaced.get(e.entry_id, e) if e.entry_id else e for e in snapshot.entries),
        cleared=tuple(items),
        tokens_before_clearing=snapshot.loaded_tokens,
    )


def saved(snapshot: Snapshot) -> int:
    return sum(c.tokens_before - c.tokens_after for c in snapshot.cleared)
