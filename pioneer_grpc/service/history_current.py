"""The kept history brought current by the entries completed since, instead of read again whole.

A completed turn adds entries after the newest one a kept full answer read. One
statement (store/history_state.py) reads the thread's state with the completed
entries after that sequence; when the state differs from the kept one only by
those entries (same settings and summary; the count of completed entries grew by
exactly as many rows as were read, and the newest of them is the thread's
newest), the answer is the kept one with those entries appended: they were
counted when appended, and only they are rendered and encoded. Anything else (a
turn completed out of order, a new summary or setting, another worker's or
replica's write this one did not see whole, a read that would need repairs, more
turns than a load reads, the threshold crossed) is a full load, as before.

The extension gives exactly what `decide.full` gives on the whole read:
tests/history/test_history_current.py compares them.
"""

from __future__ import annotations

from dataclasses import replace

from pioneer_grpc.history import snapshot as decided
from pioneer_grpc.history.budget import MAX_LOADED_TURNS
from pioneer_grpc.history.render import to_chat_message
from pioneer_grpc.history.repair import repair
from pioneer_grpc.history.units import group_units
from pioneer_grpc.service import token_fit
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.load_cache import CachedLoad
from pioneer_grpc.store.history_state import HistoryRead, HistoryState
from pioneer_grpc.v1 import history_pb2


def _settings(state: HistoryState) -> HistoryState:
    return replace(state, completed_count=0, completed_max_id=None)


def extended(
    ctx: ServiceContext, thread_id: str, kept: CachedLoad, read: HistoryRead
) -> CachedLoad | None:
    """`kept` (an extendable answer that excludes nothing) with `read.newer` appended, kept in its
    place; None when that is not exactly what a full load would answer."""
    snapshot, state, newer = kept.snapshot, read.state, read.newer
    if snapshot is None or not newer or _settings(state) != _settings(kept.state):
        return None
    # `newer` was read after `kept.through`; the counts say whether it is all that changed (a full
    # read whose rows were newer than the state it was kept with fails here too).
    if (
        state.completed_count != kept.state.completed_count + len(newer)
        or newer[-1].sequence != state.completed_max_id
    ):
        return None  # something else changed too (a turn completed out of order, say): read whole
    tokenizer = token_fit.counting_for(ctx.models, state.model).tokenizer
    if any(entry.artifact_refs or entry.content_parts or entry.tokenizer != tokenizer for entry in newer):
        return None  # counted per read (attachments) or in another tokenizer: the full load does it
    repaired = repair(newer)
    if repaired.diagnostics or _call_ids(newer) & kept.call_ids:
        return None
    assert kept.turn_ids is not None  # an extendable answer had nothing repaired
    if len(kept.turn_ids | {entry.turn_id for entry in newer}) > MAX_LOADED_TURNS:
        return None
    units = group_units(newer)
    grown = replace(
        snapshot,
        entries=snapshot.entries + tuple(newer),
        read_count=snapshot.loaded_count + len(newer),
        newest=(newer[-1].entry_id, newer[-1].sequence),
    )
    # What `units` would group from all the entries: a clean read of whole turns starts a unit.
    grown.__dict__["units"] = [*snapshot.units, *units]
    # `grown.sendable_tokens`, from the kept answer's (a full answer sends all it counts).
    sendable = kept.result.report.tokens_after + sum(unit.tokens for unit in units if not unit.orphan)
    if sendable > 0 and sendable >= grown.budget.threshold:
        return None  # `grown.needs_compression`
    use = history_pb2.SUMMARY_USE_REUSED if grown.summary else history_pb2.SUMMARY_USE_NONE
    report = decided.report_for(grown, history_pb2.HISTORY_DECISION_FULL, use)
    sent = [entry for unit in units if not unit.orphan for entry in unit.entries]
    result = decided.finish(
        report,
        [*kept.result.messages, *(to_chat_message(entry) for entry in sent)],
        [*kept.result.kept, *sent],
        sendable,
        grown,
    )
    return ctx.load_cache.store(thread_id, "", state, grown, result, extendable=True, extends=kept)


def _call_ids(entries: list[history_pb2.ConversationEntry]) -> set[str]:
    return {call.id for entry in entries for call in entry.tool_calls}
