"""Clearing old tool results: the first step of compaction, before any summary.

Tool results are the bulk of an agent's history and the part a model needs
least once it has acted on them. Over the threshold, every tool result but the
newest `keep_tool_results` (default 3) is replaced by a short placeholder that
keeps the call/result pair valid and says how to get the content again (call
the tool again); only a history still over the threshold is summarized. A
result no larger than its placeholder is left as it is.

Nothing stored changes: clearing is a pure function of what a load read, so
the same history clears the same results on every load.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from pioneer_grpc.errors import FieldViolation
from pioneer_grpc.history.render import entry_text
from pioneer_grpc.history.snapshot import Snapshot
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


def clear(snapshot: Snapshot, keep: int, placeholder_tokens: Mapping[str, int]) -> Snapshot:
    """The snapshot with old results replaced by placeholders (`placeholder_tokens`: entry_id -> tokens).

    A placeholder keeps its result's artifact refs, so it still costs their images and
    documents. A result whose placeholder would not save a token is kept.
    """
    replaced: dict[str, history_pb2.ConversationEntry] = {}
    cleared: list[history_pb2.ClearedToolResult] = []
    for entry in candidates(snapshot.entries, keep):
        tokens = placeholder_tokens.get(entry.entry_id)
        if tokens is None:
            continue
        found = cleared_one(entry, tokens, snapshot.attached_tokens)
        if found is not None:
            replaced[entry.entry_id] = found[0]
            cleared.append(found[1])
    if not cleared:
        return snapshot
    return dataclasses.replace(
        snapshot,
        entries=tuple(replaced.get(e.entry_id, e) if e.entry_id else e for e in snapshot.entries),
        cleared=tuple(cleared),
        tokens_before_clearing=snapshot.loaded_tokens,
    )


def saved(snapshot: Snapshot) -> int:
    return sum(c.tokens_before - c.tokens_after for c in snapshot.cleared)
