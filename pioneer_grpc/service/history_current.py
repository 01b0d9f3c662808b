"""The kept history brought current by the entries completed since, instead of read again whole.

A completed turn adds entries after the newest one a kept answer read. One
statement (store/history_state.py) reads the thread's state with the completed
entries after that sequence; when the state differs from the kept one only by
those entries (same settings and summary; the count of completed entries grew by
exactly as many rows as were read, and the newest of them is the thread's
newest), the answer is the kept one with those entries appended: they were
counted when appended, and only they are rendered and encoded. So are

- a summarized history (the summary and the turns it kept beside it);
- a cleared history: the new turns are appended as they are, the results cleared
  stay cleared (clearing.py: clearing starts again only at the threshold);
- new entries with images and documents (a screenshot in a tool result): what they
  cost for the thread's model is counted as the whole read counts it, per read.

Nothing else changes an earlier byte of a kept history: the threshold and the turn
cap are where compaction starts, and there (as for anything else: a turn completed
out of order, a new summary or setting, another worker's or replica's write this one
did not see whole, a read that would need repairs) the answer is a full load.

The extension gives exactly what the whole read gives (`decide.full`, of the
cleared snapshot for a cleared history): tests/history/test_history_current.py
compares them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pioneer_grpc.history.budget import MAX_LOADED_TURNS
from pioneer_grpc.history.decide import LoadResult, Snapshot
from pioneer_grpc.history.render import to_chat_message
from pioneer_grpc.history.repair import repair
from pioneer_grpc.history.snapshot import turn_limit_note
from pioneer_grpc.history.units import group_units
from pioneer_grpc.service import history_compaction as compaction
from pioneer_grpc.service import token_fit
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.load_cache import CachedLoad
from pioneer_grpc.service.tenancy import thread_key
from pioneer_grpc.store.port import HistoryRead, HistoryState
from pioneer_grpc.v1 import history_pb2


def _settings(state: HistoryState) -> HistoryState:
    return replace(state, completed_count=0, completed_max_id=None)


def extended(ctx: ServiceContext, thread_id: str, kept: CachedLoad, read: HistoryRead) -> CachedLoad | None:
    """`kept` (an extendable answer that excludes nothing) with `read.newer` appended, kept in its
    place; None when that is not exactly what a full load would answer.

    The work is the new entries' (the kept answer's report is copied, not rebuilt).
    """
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
    if any(entry.tokenizer != tokenizer for entry in newer):
        return None  # counted in another tokenizer: the full load counts them again
    # Repaired alone as within the whole read: the kept answer had nothing to repair, so each of its
    # calls has its result, and the walk of the whole read starts afresh at the first new entry
    # unless that is a tool result, which is then repaired alone too (an orphan). Call ids that
    # earlier turns used again change nothing.
    if repair(newer).diagnostics:
        return None
    assert kept.turn_ids is not None  # an extendable answer had nothing repaired
    turns = len(kept.turn_ids) + len({entry.turn_id for entry in newer})
    if snapshot.more_entries or turns >= MAX_LOADED_TURNS:
        return None  # at the turn cap the history is compacted: the full load does it
    rest = _after_attachment_notes(kept, snapshot)
    if rest is None:
        return None
    # Images and documents are counted per read, for the thread's model: added to the new entries'
    # counts as the whole read adds them to the entries it read (`read.newer` is read for this load).
    attached = token_fit.with_attachments(ctx.models, state.model, newer)
    attachments = _Attachments(
        (*snapshot.attachment_notes, *attached.notes), {**snapshot.attached_tokens, **attached.tokens}
    )
    # What `group_units` gives on all the entries: the first new entry is not a tool result (that
    # would have been repaired), so it starts a unit; none of the new units is an orphan.
    units = group_units(newer)
    added = sum(unit.tokens for unit in units)
    sendable = kept.result.report.tokens_after + added  # `grown.sendable_tokens`
    if sendable > 0 and sendable >= snapshot.budget.threshold:
        return None  # the threshold reached: the full load compacts
    grown = replace(
        snapshot,
        entries=snapshot.entries + tuple(newer),
        read_count=snapshot.loaded_count + len(newer),
        newest=(newer[-1].entry_id, newer[-1].sequence),
        attachment_notes=attachments.notes,
        attached_tokens=attachments.tokens,
    )
    grown.__dict__["units"] = [*snapshot.units, *units]
    if kept.cleared is not None:
        return _extended_cleared(ctx, thread_id, kept, state, grown, newer, attachments, rest, added)
    # `decide.full(grown)`'s report: the same but for the counts the entries change.
    report = history_pb2.HistoryDecisionReport()
    report.CopyFrom(kept.result.report)
    report.entries_loaded += len(newer)
    report.tokens_before += added
    report.tokens_after = sendable
    report.entries_kept += len(newer)
    _diagnostics_of(report, grown, rest)
    result = LoadResult(
        messages=[*kept.result.messages, *(to_chat_message(entry) for entry in newer)],
        report=report,
        kept=[*kept.result.kept, *newer],
    )
    return ctx.load_cache.store(
        thread_key(thread_id), "", state, grown, result, extendable=True, extends=kept
    )


@dataclass(frozen=True)
class _Attachments:
    """The grown snapshot's `attachment_notes` and `attached_tokens`: the kept entries' that stay,
    then the new entries'."""

    notes: tuple[history_pb2.HistoryDiagnostic, ...]
    tokens: dict[str, int]


def _after_attachment_notes(
    kept: CachedLoad, snapshot: Snapshot
) -> list[history_pb2.HistoryDiagnostic] | None:
    """The kept report's diagnostics after its attachment notes (`report_for` puts the turn limit's
    note, then the repairs, none in an extendable answer, then those notes first); None when they are
    not laid out so (then the whole read says)."""
    diagnostics = list(kept.result.report.diagnostics)
    start = 1 if snapshot.more_entries else 0
    end = start + len(snapshot.attachment_notes)
    if diagnostics[start:end] != list(snapshot.attachment_notes):
        return None
    return diagnostics[end:]


def _diagnostics_of(
    report: history_pb2.HistoryDecisionReport, grown: Snapshot, rest: list[history_pb2.HistoryDiagnostic]
) -> None:
    """The grown report's diagnostics in `report_for`'s order: the turn limit's note, the attachment
    notes, then `rest`."""
    del report.diagnostics[:]
    report.diagnostics.extend(
        [*([turn_limit_note()] if grown.more_entries else []), *grown.attachment_notes, *rest]
    )


def _extended_cleared(
    ctx: ServiceContext,
    thread_id: str,
    kept: CachedLoad,
    state: HistoryState,
    grown: Snapshot,
    newer: list[history_pb2.ConversationEntry],
    attachments: _Attachments,
    rest: list[history_pb2.HistoryDiagnostic],
    added: int,
) -> CachedLoad | None:
    """The cleared history `kept` with `newer` appended as they are: what `clearing.replay` gives on
    the whole grown read while it stays under the threshold (clearing starts again only there; the
    caller checked). `rest`: the kept report's diagnostics after its attachment notes (the
    clearing's note last, written again)."""
    cleared = kept.cleared
    assert cleared is not None
    ready = replace(
        cleared,
        entries=cleared.entries + tuple(newer),
        read_count=grown.read_count,
        newest=grown.newest,
        tokens_before_clearing=(cleared.tokens_before_clearing or 0) + added,
        attachment_notes=attachments.notes,
        attached_tokens=attachments.tokens,
    )
    ready.__dict__["units"] = [*cleared.units, *group_units(newer)]
    # `decide.full(ready, [the clearing's note])`'s report: the counts and the note.
    report = history_pb2.HistoryDecisionReport()
    report.CopyFrom(kept.result.report)
    report.entries_loaded += len(newer)
    report.entries_kept += len(newer)
    report.tokens_before += added
    report.tokens_after += added
    _diagnostics_of(report, grown, rest[:-1])
    report.diagnostics.append(compaction.cleared_note(ready, False, report.cleared_tokens_saved))
    result = LoadResult(
        messages=[*kept.result.messages, *(to_chat_message(entry) for entry in newer)],
        report=report,
        kept=[*kept.result.kept, *newer],
    )
    return ctx.load_cache.store(
        thread_key(thread_id), "", state, grown, result, extendable=True, extends=kept, cleared=ready
    )
