"""Compaction of a history at its threshold or its turn cap, as the thread's strategy says.

Every compaction rewrites the history from where it changes it, so the provider's
prompt cache serves nothing after that point; each goes down to the thread's low-water
mark in one chunk, and the history then grows byte for byte the same until the next.

- clear-then-summarize (default): old tool results are cleared down to the low-water mark
  (history/clearing.py); where that frees less than the least worth clearing, or the
  turn cap is reached, the older turns are summarized.
- summarize: the older turns are summarized at once.
- truncate: the older turns are left out, never a summarizer.

A summary stands for the older turns only: the newest whole turns that fit under the
low-water mark beside it stay as they were (decide.split), and it covers through the
entry before them, so later loads read it and those turns. A truncation stores a mark
the same way: a summary row that carries the previous summary's text (or none) and
covers through the entry before the turns kept.

A compaction that fails (the summarizer errs, times out, or returns a summary
that is too large) marks the thread with the newest entry it covered; later
loads truncate without asking again until the history has grown by the summary
target since (10% of the budget), so a summarizer that cannot make progress is
not asked on every round. A stored summary clears the mark, and so does any
UpdateThread.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, replace

from opentelemetry.trace import Span

from pioneer_grpc.history import clearing, decide
from pioneer_grpc.history import diagnostics as codes
from pioneer_grpc.history.budget import LOW_WATER_TURNS, MAX_LOADED_TURNS
from pioneer_grpc.history.render import summary_text
from pioneer_grpc.history.summarizers import Summarizer, SummarizerError, SummaryRequest
from pioneer_grpc.history.tokens import count_tokens
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.tenancy import thread_key
from pioneer_grpc.store.port import HistoryRead, SummaryToStore
from pioneer_grpc.telemetry import tracing
from pioneer_grpc.v1 import history_pb2

log = logging.getLogger(__name__)


async def prepared(snapshot: decide.Snapshot) -> clearing.Cleared:
    """The snapshot as clearing left it (clearing.replay), when the strategy clears; and whether the
    history needs more than clearing (a summary, or a truncation)."""
    clears = snapshot.strategy == history_pb2.COMPACTION_STRATEGY_CLEAR_THEN_SUMMARIZE
    if not clears or snapshot.at_turn_cap:  # clearing leaves every turn where it was
        return clearing.Cleared(snapshot, insufficient=snapshot.needs_compression)
    texts = clearing.placeholder_texts(snapshot.entries, snapshot.keep_tool_results)
    counts = await count_tokens(list(texts.values()), snapshot.tokenizer) if texts else []
    return clearing.replay(snapshot, snapshot.keep_tool_results, dict(zip(texts, counts, strict=True)))


def cleared_note(
    snapshot: decide.Snapshot, still_over: bool, saved: int | None = None
) -> history_pb2.HistoryDiagnostic:
    """The diagnostic of a clearing; `saved` when the caller has it (else summed)."""
    saved = clearing.saved(snapshot) if saved is None else saved
    message = (
        f"cleared {len(snapshot.cleared)} tool result(s) older than the newest "
        f"{snapshot.keep_tool_results}, saving {saved} tokens"
    )
    if still_over:
        return decide.diagnostic(
            codes.CLEARING_INSUFFICIENT,
            f"{message}; clearing more would not free {snapshot.budget.clear_at_least} tokens or bring "
            f"the history under the threshold of {snapshot.budget.threshold}",
        )
    return decide.diagnostic(codes.TOOL_RESULTS_CLEARED, message)


def _deferral(snapshot: decide.Snapshot) -> history_pb2.HistoryDiagnostic | None:
    """Why the summarizer is not asked again yet (the last compaction failed), or None."""
    if snapshot.failed_sequence is None:
        return None
    grown = sum(e.token_count + 4 for e in snapshot.entries if e.sequence > snapshot.failed_sequence)
    if grown >= snapshot.budget.target:
        return None
    return decide.diagnostic(
        codes.COMPACTION_DEFERRED,
        f"the last compaction failed; not tried again until {snapshot.budget.target} tokens of new "
        f"entries arrive ({grown} so far); truncated instead",
    )


@dataclass(frozen=True)
class Settled:
    """An answer that needed no summarizer, and the snapshot it was decided from (cleared when the
    strategy cleared)."""

    result: decide.LoadResult
    ready: decide.Snapshot
    insufficient: bool = True

    @property
    def cleared_enough(self) -> bool:
        """The answer is `decide.full` of the cleared snapshot: clearing kept it under the threshold."""
        return bool(self.ready.cleared) and not self.insufficient


async def settled(ctx: ServiceContext, snapshot: decide.Snapshot, dry_run: bool) -> Settled | None:
    """`without_summarizer`, with the snapshot its answer was decided from."""
    found = await prepared(snapshot)
    ready = found.snapshot
    notes = [cleared_note(ready, found.insufficient)] if ready.cleared else []
    if not found.insufficient:
        return Settled(decide.full(ready, notes), ready, insufficient=False)
    result = _truncated_or_pending(ctx, snapshot, ready, notes, dry_run)
    return None if result is None else Settled(result, ready)


async def without_summarizer(
    ctx: ServiceContext, snapshot: decide.Snapshot, dry_run: bool
) -> decide.LoadResult | None:
    """The answer when no summarizer is needed (cleared enough, truncate, deferred, dry run), else None."""
    found = await settled(ctx, snapshot, dry_run)
    return None if found is None else found.result


def _truncated_or_pending(
    ctx: ServiceContext,
    snapshot: decide.Snapshot,
    ready: decide.Snapshot,
    notes: list[history_pb2.HistoryDiagnostic],
    dry_run: bool,
) -> decide.LoadResult | None:
    name = ctx.summarizer.name
    truncates = snapshot.strategy == history_pb2.COMPACTION_STRATEGY_TRUNCATE
    if dry_run and truncates:
        return decide.truncated(ready, history_pb2.SUMMARY_USE_NONE, diagnostics=notes)
    if dry_run:
        result = decide.pending(ready, name)
        result.report.diagnostics.extend(notes)
        return result
    if truncates:
        return None  # a truncation mark is stored under the thread's compression lock, as a summary is
    deferred = _deferral(ready)
    if deferred is not None:
        return decide.truncated(ready, history_pb2.SUMMARY_USE_NONE, name, [*notes, deferred])
    return None


async def _ask(
    summarizer: Summarizer, request: SummaryRequest, thread_id: str, wait: float
) -> tuple[str, str, str]:
    """(summary text, "", "") or ("", failure kind, message): the summarizer's failures never raise."""
    try:
        async with asyncio.timeout(wait):
            text = (await summarizer.summarize(request)).strip()
    except SummarizerError as exc:
        return "", "error", f"{summarizer.name}: {exc}"
    except TimeoutError:
        return "", "timeout", f"{summarizer.name}: no summary within {wait:g} s"
    except Exception as exc:
        log.exception("summarizer %s failed on thread %s", summarizer.name, thread_id)
        return "", "error", f"{summarizer.name}: {type(exc).__name__}: {exc}"
    if not text:
        return "", "empty", f"{summarizer.name}: returned an empty summary"
    return text, "", ""


async def _candidate(
    text: str, snapshot: decide.Snapshot, summarizer: str, model: str, covers: tuple[str, int]
) -> decide.StoredSummary:
    [tokens] = await count_tokens([summary_text(text)], snapshot.tokenizer)
    return decide.StoredSummary(
        text=text,
        token_count=tokens,
        covers_through_entry_id=covers[0],
        covers_through_sequence=covers[1],
        summarizer=summarizer,
        model=model,
        tokenizer=snapshot.tokenizer,
    )


def _covers(snapshot: decide.Snapshot, parts: decide.Split) -> tuple[str, int]:
    """The newest entry the compaction covers: the last of the older part, else what a summary of
    the whole snapshot would."""
    older = [entry for unit in parts.older for entry in unit.entries if entry.entry_id]
    if parts.kept and older:
        return older[-1].entry_id, older[-1].sequence
    return snapshot.covers_through


def _split(snapshot: decide.Snapshot, head: int) -> decide.Split:
    """decide.split, where it leaves something older to compact; else everything is older."""
    parts = decide.split(snapshot, head)
    return parts if parts.older_entries else decide.Split(tuple(snapshot.units), ())


def _summarized(ctx: ServiceContext, span: Span, summarizer: str, seconds: float, failure: str) -> None:
    ctx.telemetry.metrics.summary_call(summarizer, seconds, failure)
    if span.is_recording():
        span.set_attributes(
            {
                tracing.SUMMARIZER_OUTCOME: failure or "ok",
                tracing.SUMMARIZER_LATENCY_MS: round(seconds * 1000, 3),
            }
        )


async def compress(
    ctx: ServiceContext, snapshot: decide.Snapshot, thread_id: str, exclude_turn_id: str, wait: float
) -> decide.LoadResult:
    """Compacts the snapshot down to its low-water mark: the summarizer is asked for its older turns
    (tool results as stored) and the newest whole turns that fit stay beside the summary; the
    truncate strategy stores a mark instead. Falls back to truncation when the summarizer fails.

    `snapshot` is what a load leaving out `exclude_turn_id` read. What is stored replaces the
    thread's kept history (`_kept_summarized`).
    """
    if snapshot.strategy == history_pb2.COMPACTION_STRATEGY_TRUNCATE:
        return await _truncate(ctx, snapshot, thread_id, exclude_turn_id)
    summarizer = ctx.summarizer
    cleared = await prepared(snapshot)
    fallback = cleared.snapshot
    notes = [cleared_note(fallback, True)] if fallback.cleared else []
    parts = _split(snapshot, snapshot.budget.target)
    previous = snapshot.summary
    request = SummaryRequest(
        entries=parts.older_entries,
        previous_summary=previous.text if previous else "",
        target_tokens=snapshot.budget.target,
        model=snapshot.summary_model or snapshot.model,
    )
    with ctx.telemetry.span("pioneer.history.summarize", {tracing.SUMMARIZER: summarizer.name}) as span:
        started = time.perf_counter()
        text, failure, message = await _ask(summarizer, request, thread_id, wait)
        seconds = time.perf_counter() - started
        candidate = None
        if not failure:
            covers = _covers(snapshot, parts)
            candidate = await _candidate(text, snapshot, summarizer.name, request.model, covers)
            replaced = parts.older_tokens + (previous.cost if previous else 0)
            rejection = decide.summary_rejection(candidate.cost, fallback, replaced)
            if rejection is not None:
                failure, message = "rejected", f"{summarizer.name}: {rejection}"
        _summarized(ctx, span, summarizer.name, seconds, failure)
    if candidate is None or failure:
        code = codes.SUMMARY_REJECTED if failure == "rejected" else codes.SUMMARIZER_FAILED
        # The thread marked with the newest entry the failed compaction covered.
        await ctx.store.history.mark_compaction_failed(thread_id, snapshot.covers_through[1])
        return decide.truncated(
            fallback,
            history_pb2.SUMMARY_USE_FAILED,
            summarizer.name,
            [*notes, decide.diagnostic(code, message)],
        )
    # The summary stored and the mark of a failed compaction cleared, both or neither.
    read = await ctx.store.history.store_summary(thread_id, _to_store(candidate), exclude_turn_id)
    _kept_summarized(ctx, thread_id, snapshot, candidate, read, parts)
    return decide.summarized(snapshot, candidate, summarizer.name, [*notes, *_cap_note(snapshot)], parts)


async def _truncate(
    ctx: ServiceContext, snapshot: decide.Snapshot, thread_id: str, exclude_turn_id: str
) -> decide.LoadResult:
    """The truncate strategy's compaction: the older turns left out by a mark (a summary row with the
    previous summary's text, or none) covering through the entry before the turns kept."""
    previous = snapshot.summary
    parts = _split(snapshot, previous.cost if previous else 0)
    if not parts.kept:  # the newest turn alone is over the low-water mark: it is cut to fit
        return decide.truncated(snapshot, history_pb2.SUMMARY_USE_NONE)
    covers = _covers(snapshot, parts)
    mark = decide.StoredSummary(
        text=previous.text if previous else "",
        token_count=previous.token_count if previous else 0,
        covers_through_entry_id=covers[0],
        covers_through_sequence=covers[1],
        summarizer=TRUNCATION_MARK,
        model=previous.model if previous else "",
        tokenizer=snapshot.tokenizer,
    )
    read = await ctx.store.history.store_summary(thread_id, _to_store(mark), exclude_turn_id)
    _kept_summarized(ctx, thread_id, snapshot, mark, read, parts)
    result = decide.summarized(snapshot, mark, "", _cap_note(snapshot), parts)
    result.report.decision = history_pb2.HISTORY_DECISION_TRUNCATED
    result.report.summary_use = history_pb2.SUMMARY_USE_REUSED if mark.sent else history_pb2.SUMMARY_USE_NONE
    return result


# The summarizer name of a truncation's mark (GetThreadSummary shows it).
TRUNCATION_MARK = "truncate"


def _cap_note(snapshot: decide.Snapshot) -> list[history_pb2.HistoryDiagnostic]:
    """The diagnostic of a compaction the turn cap started (none when the threshold did)."""
    if not snapshot.at_turn_cap or snapshot.sendable_tokens >= snapshot.budget.threshold:
        return []
    return [
        decide.diagnostic(
            codes.TURN_CAP_COMPACTED,
            f"{MAX_LOADED_TURNS} completed turns after the summary: the older ones were compacted, "
            f"the newest {LOW_WATER_TURNS} at most kept",
        )
    ]


def _kept_summarized(
    ctx: ServiceContext,
    thread_id: str,
    snapshot: decide.Snapshot,
    candidate: decide.StoredSummary,
    read: HistoryRead,
    parts: decide.Split,
) -> None:
    """Keeps the history the new summary (or mark) leaves, in place of what was kept for the thread.

    The summary covers the older part of what was read, so a load of the state the
    compaction committed (`read`, read in its unit) reads it and the turns kept beside
    it: `decide.full` of that; turns completed later extend it (history_current.py).
    Not when the state has completed entries the load did not read (written meanwhile),
    the read needed repairs, or the load left out a completed turn.
    """
    newest = read.state.completed_max_id
    read_through = snapshot.newest[1] if snapshot.newest is not None else candidate.covers_through_sequence
    if read.excluded_completed or snapshot.repairs or (newest is not None and newest != read_through):
        return
    kept = parts.kept_entries
    ids = {entry.entry_id for entry in kept}
    summarized = replace(
        snapshot,
        summary=candidate,
        entries=tuple(kept),
        more_entries=False,
        repairs=(),
        read_count=None,
        newest=snapshot.newest if kept else None,
        cleared=(),
        tokens_before_clearing=None,
        failed_sequence=None,
        attachment_notes=tuple(note for note in snapshot.attachment_notes if note.entry_id in ids),
        attached_tokens={k: v for k, v in snapshot.attached_tokens.items() if k in ids},
    )
    if summarized.needs_compression:
        return  # under the low-water mark, far below the threshold: never so
    ctx.load_cache.store(
        thread_key(thread_id), "", read.state, summarized, decide.full(summarized), extendable=True
    )


def _to_store(candidate: decide.StoredSummary) -> SummaryToStore:
    return SummaryToStore(
        text=candidate.text,
        token_count=candidate.token_count,
        tokenizer=candidate.tokenizer,
        covers_through_entry_id=candidate.covers_through_entry_id,
        covers_through_sequence=candidate.covers_through_sequence,
        model=candidate.model,
        summarizer=candidate.summarizer,
    )
