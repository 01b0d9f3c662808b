"""Compaction of a history over the threshold, as the thread's strategy says.

- clear-then-summarize (default): old tool results are cleared first
  (history/clearing.py); only a history still over the threshold is summarized.
- summarize: the summarizer at once (the original's behaviour).
- truncate: the newest whole turns that fit, never a summarizer.

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
from pioneer_grpc.history.render import summary_text
from pioneer_grpc.history.summarizers import Summarizer, SummarizerError, SummaryRequest
from pioneer_grpc.history.tokens import count_tokens
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.store.port import HistoryRead, SummaryToStore
from pioneer_grpc.telemetry import tracing
from pioneer_grpc.v1 import history_pb2

log = logging.getLogger(__name__)


async def prepared(snapshot: decide.Snapshot) -> decide.Snapshot:
    """The snapshot with old tool results cleared, when the strategy clears; else as it is."""
    if snapshot.strategy != history_pb2.COMPACTION_STRATEGY_CLEAR_THEN_SUMMARIZE:
        return snapshot
    texts = clearing.placeholder_texts(snapshot.entries, snapshot.keep_tool_results)
    if not texts:
        return snapshot
    counts = await count_tokens(list(texts.values()), snapshot.tokenizer)
    return clearing.clear(snapshot, snapshot.keep_tool_results, dict(zip(texts, counts, strict=True)))


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
            f"{message}; still {snapshot.sendable_tokens} tokens, over the threshold of "
            f"{snapshot.budget.threshold}",
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

    @property
    def cleared_enough(self) -> bool:
        """The answer is `decide.full` of the cleared snapshot: clearing brought it under the threshold."""
        return bool(self.ready.cleared) and not self.ready.needs_compression


async def settled(ctx: ServiceContext, snapshot: decide.Snapshot, dry_run: bool) -> Settled | None:
    """`without_summarizer`, with the snapshot its answer was decided from."""
    ready = await prepared(snapshot)
    notes = [cleared_note(ready, ready.needs_compression)] if ready.cleared else []
    if not ready.needs_compression:
        return Settled(decide.full(ready, notes), ready)
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
    if snapshot.strategy == history_pb2.COMPACTION_STRATEGY_TRUNCATE:
        return decide.truncated(ready, history_pb2.SUMMARY_USE_NONE, diagnostics=notes)
    if dry_run:
        result = decide.pending(ready, name)
        result.report.diagnostics.extend(notes)
        return result
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
    text: str, snapshot: decide.Snapshot, summarizer: str, model: str
) -> decide.StoredSummary:
    [tokens] = await count_tokens([summary_text(text)], snapshot.tokenizer)
    covers_id, covers_sequence = snapshot.covers_through
    return decide.StoredSummary(
        text=text,
        token_count=tokens,
        covers_through_entry_id=covers_id,
        covers_through_sequence=covers_sequence,
        summarizer=summarizer,
        model=model,
        tokenizer=snapshot.tokenizer,
    )


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
    """Asks the summarizer for the whole snapshot (tool results as stored); falls back to truncation.

    `snapshot` is what a load leaving out `exclude_turn_id` read. A stored summary replaces
    the thread's kept history (`_kept_summarized`).
    """
    summarizer = ctx.summarizer
    fallback = await prepared(snapshot)
    notes = [cleared_note(fallback, True)] if fallback.cleared else []
    request = SummaryRequest(
        entries=snapshot.entries,
        previous_summary=snapshot.summary.text if snapshot.summary else "",
        target_tokens=snapshot.budget.target,
        model=snapshot.summary_model or snapshot.model,
    )
    with ctx.telemetry.span("pioneer.history.summarize", {tracing.SUMMARIZER: summarizer.name}) as span:
        started = time.perf_counter()
        text, failure, message = await _ask(summarizer, request, thread_id, wait)
        seconds = time.perf_counter() - started
        candidate = None
        if not failure:
            candidate = await _candidate(text, snapshot, summarizer.name, request.model)
            rejection = decide.summary_rejection(candidate.cost, fallback)
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
    _kept_summarized(ctx, thread_id, snapshot, candidate, read)
    return decide.summarized(snapshot, candidate, summarizer.name, notes)


def _kept_summarized(
    ctx: ServiceContext,
    thread_id: str,
    snapshot: decide.Snapshot,
    candidate: decide.StoredSummary,
    read: HistoryRead,
) -> None:
    """Keeps the history the new summary leaves, in place of what was kept for the thread.

    The summary covers every entry read, so a load of the state the compaction
    committed (`read`, read in its unit) reads no entry: it answers the summary
    alone, as `decide.full` of that; turns completed later extend it
    (history_current.py). Not when the state has completed entries the summary
    does not cover (written meanwhile), or the load left out a completed turn.
    """
    covered = candidate.covers_through_sequence
    newest = read.state.completed_max_id
    if read.excluded_completed or (newest is not None and newest > covered):
        return
    summarized = replace(
        snapshot,
        summary=candidate,
        entries=(),
        more_entries=False,
        repairs=(),
        read_count=None,
        newest=None,
        cleared=(),
        tokens_before_clearing=None,
        failed_sequence=None,
        attachment_notes=(),
        attached_tokens={},
    )
    if summarized.needs_compression:
        return  # a summary is accepted under its limit, far below the threshold: never so
    ctx.load_cache.store(thread_id, "", read.state, summarized, decide.full(summarized), extendable=True)


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
