"""The kept history brought current by the entries completed since, instead of read again whole.

A completed turn adds entries after the newest one a kept answer read. One
statement (store/history_state.py) reads the thread's state with the completed
entries after that sequence; when the state differs from the kept one only by
those entries (same settings and summary; the count of completed entries grew by
exactly as many rows as were read, and the newest of them is the thread's
newest), the answer is the kept one with those entries appended: they were
counted when appended, and only they are rendered and encoded. So are

- a summarized history (the summary's answer, and after a compaction the summary alone);
- a history past the turn limit: the oldest turns leave as new ones come;
- a cleared history (over the threshold, under it with old tool results cleared):
  the results the new turns push past the newest `keep` are cleared too;
- new entries with images and documents (a screenshot in a tool result): what they
  cost for the thread's model is counted as the whole read counts it, per read.

Anything else (a turn completed out of order, a new summary or setting, another
worker's or replica's write this one did not see whole, a read that would need
repairs, turns interleaved past the limit, the threshold crossed) is a full load,
as before.

The extension gives exactly what the whole read gives (`decide.full`, of the
cleared snapshot for a cleared history): tests/history/test_history_current.py
compares them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pioneer_grpc.history import clearing
from pioneer_grpc.history.budget import MAX_LOADED_TURNS
from pioneer_grpc.history.decide import LoadResult, Snapshot
from pioneer_grpc.history.render import entry_text, to_chat_message
from pioneer_grpc.history.repair import repair
from pioneer_grpc.history.snapshot import finish, report_for, turn_limit_note
from pioneer_grpc.history.tokens import MESSAGE_OVERHEAD, count_blocking
from pioneer_grpc.history.truncate import picked_turns
from pioneer_grpc.history.units import group_units
from pioneer_grpc.service import history_compaction as compaction
from pioneer_grpc.service import token_fit
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.load_cache import CachedLoad
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
    if snapshot.more_entries and len(kept.turn_ids) != MAX_LOADED_TURNS:
        return None  # it holds entries of older turns too (turns interleaved): which to drop is not known
    # Past the turn limit the oldest turns go, as the whole read leaves them out (`_oldest`).
    drop = _oldest(snapshot, turns - MAX_LOADED_TURNS) if turns > MAX_LOADED_TURNS else (0, 0)
    if drop is None:
        return None
    entries_dropped, units_dropped = drop
    rest = _after_attachment_notes(kept, snapshot)
    if rest is None:
        return None
    # Images and documents are counted per read, for the thread's model: added to the new entries'
    # counts as the whole read adds them to the entries it read (`read.newer` is read for this load).
    attached = token_fit.with_attachments(ctx.models, state.model, newer)
    gone = snapshot.entries[:entries_dropped]
    gone_ids = {entry.entry_id for entry in gone}
    attachments = _Attachments(
        (*(note for note in snapshot.attachment_notes if note.entry_id not in gone_ids), *attached.notes),
        {
            **{k: v for k, v in snapshot.attached_tokens.items() if k not in gone_ids},
            **attached.tokens,
        },
    )
    if kept.cleared is not None:
        if entries_dropped:
            return None
        return _extended_cleared(ctx, thread_id, kept, state, newer, attachments, rest)
    # What `group_units` gives on all the entries: the first new entry is not a tool result (that
    # would have been repaired), so it starts a unit; none of the new units is an orphan.
    units = group_units(newer)
    added = sum(unit.tokens for unit in units)
    removed = sum(entry.token_count + MESSAGE_OVERHEAD for entry in gone)
    sendable = kept.result.report.tokens_after - removed + added  # `grown.sendable_tokens`
    grown = replace(
        snapshot,
        entries=snapshot.entries[entries_dropped:] + tuple(newer),
        read_count=snapshot.loaded_count - entries_dropped + len(newer),
        newest=(newer[-1].entry_id, newer[-1].sequence),
        more_entries=snapshot.more_entries or turns > MAX_LOADED_TURNS,
        attachment_notes=attachments.notes,
        attached_tokens=attachments.tokens,
    )
    grown.__dict__["units"] = [*snapshot.units[units_dropped:], *units]
    if kept.truncated:
        return _extended_truncated(ctx, thread_id, kept, state, grown, newer, entries_dropped)
    if sendable > 0 and sendable >= grown.budget.threshold:
        return None  # `grown.needs_compression`
    # `decide.full(grown)`'s report: the same but for the counts the entries change.
    report = history_pb2.HistoryDecisionReport()
    report.CopyFrom(kept.result.report)
    report.entries_loaded += len(newer) - entries_dropped
    report.tokens_before += added - removed
    report.tokens_after = sendable
    report.entries_kept += len(newer) - entries_dropped
    _diagnostics_of(report, grown, rest)
    first = 1 if snapshot.summary else 0  # the summary's message stays first
    messages = kept.result.messages
    result = LoadResult(
        messages=[
            *messages[:first],
            *messages[first + entries_dropped :],
            *(to_chat_message(entry) for entry in newer),
        ],
        report=report,
        kept=[*kept.result.kept[entries_dropped:], *newer],
    )
    return ctx.load_cache.store(
        thread_id,
        "",
        state,
        grown,
        result,
        extendable=True,
        extends=kept,
        dropped=(first, entries_dropped),
    )


def _extended_truncated(
    ctx: ServiceContext,
    thread_id: str,
    kept: CachedLoad,
    state: HistoryState,
    grown: Snapshot,
    newer: list[history_pb2.ConversationEntry],
    read_dropped: int,
) -> CachedLoad | None:
    """The truncated history `kept` grown by whole new turns: `decide.truncated(grown)`, whose
    newest whole turns that fit are the kept ones but for some off the front (a turn that did not
    fit before fits less with more after it), and the new ones. The walk over the turns' counts
    is the truncation's own; only the new entries are made messages. None for anything else: new
    entries that continue a turn, a cut turn, a summary, orphans, the threshold left.
    """
    old = kept.snapshot
    assert old is not None
    if grown.summary is not None or newer[0].role != history_pb2.ENTRY_ROLE_USER:
        return None
    if any(unit.orphan for unit in grown.units) or not grown.needs_compression:
        return None
    report = report_for(grown, history_pb2.HISTORY_DECISION_TRUNCATED, history_pb2.SUMMARY_USE_NONE)
    notes = len(report.diagnostics)
    picked, remaining = picked_turns(grown, report, grown.budget.tokens)
    if len(report.diagnostics) != notes or any(cut for _, cut in picked):
        return None  # the newest turn cut: the full load says how
    count = sum(len(unit.entries) for unit, _ in picked)
    before = kept.result.kept
    # The kept entries are a subsequence of the earlier read's: starting where its last
    # `len(before)` do, they are those (a cut turn's are not).
    start = len(old.entries) - len(before)
    if before and before[0] is not old.entries[start]:
        return None
    # Kept entries that leave: this answer starts at `len(grown.entries) - count` of this read.
    left = len(grown.entries) - count + read_dropped - start
    if left < 0 or count < len(newer):
        return None
    result = finish(
        report,
        [*kept.result.messages[left:], *(to_chat_message(entry) for entry in newer)],
        [*before[left:], *newer],
        grown.budget.tokens - remaining,
        grown,
    )
    return ctx.load_cache.store(
        thread_id,
        "",
        state,
        grown,
        result,
        extendable=True,
        truncated=True,
        extends=kept,
        dropped=(0, left),
        read_dropped=read_dropped,
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


def _oldest(snapshot: Snapshot, turns: int) -> tuple[int, int] | None:
    """(entries, units) at the start of the kept entries that the whole read leaves out once `turns`
    more turns are past the limit; None when leaving them out is not that read's answer.

    The whole read takes the completed entries from the first one of the newest
    MAX_LOADED_TURNS turns on: here, from the first entry of the kept turn that follows
    the `turns` oldest ones (each turn's first entry is kept: no older turn is mixed in).
    That entry starts a unit and the repair's walk afresh unless it is a tool result.
    """
    seen: set[str] = set()
    for index, entry in enumerate(snapshot.entries):
        if entry.turn_id in seen:
            continue
        if len(seen) == turns:
            if entry.role == history_pb2.ENTRY_ROLE_TOOL:
                return None  # an orphan after the cut
            return index, _units_before(snapshot, index)
        seen.add(entry.turn_id)
    return None


def _units_before(snapshot: Snapshot, index: int) -> int:
    """How many units the first `index` entries make (a unit starts at `index`)."""
    count = covered = 0
    for unit in snapshot.units:
        if covered == index:
            return count
        covered += len(unit.entries)
        count += 1
    return count


def _extended_cleared(
    ctx: ServiceContext,
    thread_id: str,
    kept: CachedLoad,
    state: HistoryState,
    newer: list[history_pb2.ConversationEntry],
    attachments: _Attachments,
    rest: list[history_pb2.HistoryDiagnostic],
) -> CachedLoad | None:
    """The cleared history `kept` with `newer` appended, and the tool results they push past the
    newest `keep` cleared: what `clearing.clear` gives on the whole grown read, the work the new
    entries' and the newly cleared results'. None when it is no longer under the threshold.
    `attachments` the grown read's, `rest` the kept report's diagnostics after its attachment notes
    (the clearing's note last).

    Results cleared stay cleared (older results never become newer), so only the
    newest `keep` kept results and the new ones are looked at, and only the
    placeholders of the newly cleared are counted (short texts; no entry is counted again).
    """
    snapshot, cleared = kept.snapshot, kept.cleared
    assert snapshot is not None
    assert cleared is not None
    keep, size = snapshot.keep_tool_results, len(snapshot.entries)
    tools = [size + i for i, entry in enumerate(newer) if entry.role == history_pb2.ENTRY_ROLE_TOOL]
    pool = [*_newest_results(snapshot.entries, keep), *tools]
    older = pool[: max(0, len(pool) - keep)]  # results now older than the newest `keep`

    def stored(position: int) -> history_pb2.ConversationEntry:
        return snapshot.entries[position] if position < size else newer[position - size]

    texts = [entry_text(clearing.placeholder(stored(p))) for p in older]
    counts = count_blocking(texts, snapshot.tokenizer) if texts else []
    replaced: dict[int, history_pb2.ConversationEntry] = {}
    items: list[history_pb2.ClearedToolResult] = []
    for position, tokens in zip(older, counts, strict=True):
        found = clearing.cleared_one(stored(position), tokens, attachments.tokens)
        if found is not None:
            replaced[position] = found[0]
            items.append(found[1])
    added = sum(entry.token_count + MESSAGE_OVERHEAD for entry in newer)
    saved = sum(item.tokens_before - item.tokens_after for item in items)
    sendable = kept.result.report.tokens_after + added - saved
    if sendable > 0 and sendable >= snapshot.budget.threshold:
        return None  # clearing no longer brings it under: the full load compacts further
    start = min((p for p in replaced if p < size), default=size)
    tail = tuple(replaced.get(p, cleared.entries[p]) for p in range(start, size))
    new = tuple(replaced.get(size + i, entry) for i, entry in enumerate(newer))
    grown = replace(
        snapshot,
        entries=snapshot.entries + tuple(newer),
        read_count=snapshot.loaded_count + len(newer),
        newest=(newer[-1].entry_id, newer[-1].sequence),
        attachment_notes=attachments.notes,
        attached_tokens=attachments.tokens,
    )
    grown.__dict__["units"] = [*snapshot.units, *group_units(newer)]
    ready = replace(
        cleared,
        entries=cleared.entries[:start] + tail + new,
        read_count=grown.read_count,
        newest=grown.newest,
        cleared=cleared.cleared + tuple(items),
        tokens_before_clearing=(cleared.tokens_before_clearing or 0) + added,
        attachment_notes=attachments.notes,
        attached_tokens=attachments.tokens,
    )
    # `decide.full(ready, [the clearing's note])`'s report: the counts, the new cleared results, the note.
    report = history_pb2.HistoryDecisionReport()
    report.CopyFrom(kept.result.report)
    report.entries_loaded += len(newer)
    report.entries_kept += len(newer)
    report.tokens_before += added
    report.tokens_after = sendable
    report.cleared_tool_results.extend(items)
    report.cleared_tokens_saved += saved
    _diagnostics_of(report, grown, rest[:-1])  # the clearing's note, last, is written again
    report.diagnostics.append(compaction.cleared_note(ready, False, report.cleared_tokens_saved))
    first = 1 if snapshot.summary else 0
    result = LoadResult(
        messages=[
            *kept.result.messages[: first + start],
            *(to_chat_message(entry) for entry in (*tail, *new)),
        ],
        report=report,
        kept=[*kept.result.kept[:start], *tail, *new],
    )
    return ctx.load_cache.store(
        thread_id,
        "",
        state,
        grown,
        result,
        extendable=True,
        extends=kept,
        replaced=size - start,
        cleared=ready,
    )


def _newest_results(entries: tuple[history_pb2.ConversationEntry, ...], keep: int) -> list[int]:
    """Positions of the newest `keep` tool results, oldest first (read from the end)."""
    found: list[int] = []
    position = len(entries) - 1
    while len(found) < keep and position >= 0:
        if entries[position].role == history_pb2.ENTRY_ROLE_TOOL and entries[position].entry_id:
            found.append(position)
        position -= 1
    return found[::-1]
