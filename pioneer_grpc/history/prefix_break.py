"""Where a round's provider body stopped being the previous round's body followed by new messages, why,
and what it cost: the PrefixBreak of a round's history report.

A provider's prompt cache serves a round the part of its body that an earlier round of the thread
sent byte for byte: the tool definitions, the system text, then the history. `prefix_break` compares
what made two consecutive rounds' bodies, in that order, and names the first thing that changed:
the model (each has its own cache), the rendering (another provider API, or the dynamic half placed
elsewhere), the tools, a section of the compiled prompt (a stable one; a dynamic one too when the
dynamic half goes before the conversation), or the history, where the report says why (a new
summary, a clearing, the turn cap, a truncation). Pure: the service keeps the previous round's
`RoundPrefix` per thread (service/prefix_breaks.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pioneer_grpc.history import diagnostics as codes
from pioneer_grpc.v1 import history_pb2, prompt_pb2

Cause = int  # history_pb2.PrefixBreakCause

# A break names at most this many of the entries it summarized, cleared or dropped (and counts all).
MAX_BREAK_ENTRIES = 100
_LEAVING = (
    history_pb2.PREFIX_BREAK_CAUSE_SUMMARY,
    history_pb2.PREFIX_BREAK_CAUSE_TURN_CAP,
    history_pb2.PREFIX_BREAK_CAUSE_TRUNCATION,
)


@dataclass(frozen=True)
class RoundPrefix:
    """What made a round's body, before its own turn's messages."""

    model: str
    # The provider API and whether the dynamic half went before the conversation.
    rendering: tuple[int, bool]
    # A digest of the tool definitions as sent.
    tools: bytes
    # (section id, fingerprint) of the compiled prompt's sections before the conversation.
    sections: tuple[tuple[str, str], ...]
    # The history's messages, encoded (shared with the kept history, never copied), and what a
    # message is (the entry it came from, "" for a summary) with its tokens, worked out only when
    # a later round broke the prefix.
    history: Sequence[bytes]
    messages: Callable[[], list[tuple[str, int]]]
    report: history_pb2.HistoryDecisionReport


def sections_before(manifest: prompt_pb2.PromptManifest, dynamic_before: bool) -> tuple[tuple[str, str], ...]:
    """The sections a body carries before the conversation: the stable ones, and the dynamic ones
    when the dynamic half goes there too."""
    stable = prompt_pb2.SECTION_STABILITY_STABLE
    return tuple(
        (section.section_id, section.fingerprint)
        for section in manifest.section_fingerprints
        if dynamic_before or section.stability == stable
    )


def prefix_break(previous: RoundPrefix, current: RoundPrefix) -> history_pb2.PrefixBreak | None:
    """Where `current`'s body stops being `previous`'s followed by new messages; None where it is."""
    # Before the history: the provider reads none of the history the previous body carried, which
    # this round's history holds (with the turn completed since).
    whole = sum(tokens for _, tokens in current.messages()) if _differs_before(previous, current) else 0
    if previous.model != current.model:
        return _broke(history_pb2.PREFIX_BREAK_CAUSE_MODEL, whole)
    if previous.rendering != current.rendering:
        return _broke(history_pb2.PREFIX_BREAK_CAUSE_RENDERING, whole)
    if previous.tools != current.tools:
        return _broke(history_pb2.PREFIX_BREAK_CAUSE_TOOLS, whole)
    for before, now in zip(previous.sections, current.sections, strict=False):
        if before != now:
            return _broke(history_pb2.PREFIX_BREAK_CAUSE_SECTION, whole, section_id=now[0])
    if len(previous.sections) != len(current.sections):
        shorter = min(previous.sections, current.sections, key=len)
        longer = max(previous.sections, current.sections, key=len)
        return _broke(history_pb2.PREFIX_BREAK_CAUSE_SECTION, whole, section_id=longer[len(shorter)][0])
    old, new = previous.history, current.history
    if len(new) >= len(old) and tuple(new[: len(old)]) == tuple(old):
        return None  # the same history, or it followed by more
    at = 0
    while at < min(len(old), len(new)) and old[at] == new[at]:
        at += 1
    messages = previous.messages()
    entry_id = messages[at][0] if at < len(messages) else ""
    cause = _history_cause(previous.report, current.report, at, entry_id)
    broke = _broke(
        cause,
        sum(tokens for _, tokens in messages[at:]),
        kept=sum(tokens for _, tokens in messages[:at]),
        entry_id=entry_id,
    )
    affected = _affected(cause, previous, current, messages[at:])
    broke.entry_ids.extend(affected[:MAX_BREAK_ENTRIES])
    broke.entry_count = len(affected)
    return broke


def _affected(
    cause: Cause, previous: RoundPrefix, current: RoundPrefix, after_break: list[tuple[str, int]]
) -> list[str]:
    """The entries a history break summarized or dropped (those of the previous round's history from
    the break on that this round no longer sends), or cleared (newly, in this round's order)."""
    if cause == history_pb2.PREFIX_BREAK_CAUSE_CLEARING:
        before = {c.entry_id for c in previous.report.cleared_tool_results}
        return [c.entry_id for c in current.report.cleared_tool_results if c.entry_id not in before]
    if cause in _LEAVING:
        sent = {entry_id for entry_id, _ in current.messages()}
        return [entry_id for entry_id, _ in after_break if entry_id and entry_id not in sent]
    return []


def _differs_before(previous: RoundPrefix, current: RoundPrefix) -> bool:
    return (
        previous.model != current.model
        or previous.rendering != current.rendering
        or previous.tools != current.tools
        or previous.sections != current.sections
    )


def _history_cause(
    before: history_pb2.HistoryDecisionReport, now: history_pb2.HistoryDecisionReport, at: int, entry_id: str
) -> Cause:
    """Why the history changed at message `at` (the entry `entry_id`, "" for the summary)."""
    if any(d.code == codes.TURN_CAP_COMPACTED for d in now.diagnostics):
        return history_pb2.PREFIX_BREAK_CAUSE_TURN_CAP
    if now.summary_covers_through_entry_id != before.summary_covers_through_entry_id:
        if now.compaction_strategy == history_pb2.COMPACTION_STRATEGY_TRUNCATE:
            return history_pb2.PREFIX_BREAK_CAUSE_TRUNCATION
        return history_pb2.PREFIX_BREAK_CAUSE_SUMMARY
    if now.decision == history_pb2.HISTORY_DECISION_TRUNCATED:
        return history_pb2.PREFIX_BREAK_CAUSE_TRUNCATION
    newly = {c.entry_id for c in now.cleared_tool_results} - {c.entry_id for c in before.cleared_tool_results}
    if newly:
        return history_pb2.PREFIX_BREAK_CAUSE_CLEARING
    return history_pb2.PREFIX_BREAK_CAUSE_HISTORY


def _broke(
    cause: Cause, invalidated: int, kept: int = 0, section_id: str = "", entry_id: str = ""
) -> history_pb2.PrefixBreak:
    return history_pb2.PrefixBreak(
        cause=cause,  # type: ignore[arg-type]
        section_id=section_id,
        entry_id=entry_id,
        tokens_invalidated=invalidated,
        tokens_kept=kept,
    )
