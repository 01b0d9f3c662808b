"""LoadConversationHistory: read, decide, and compress under the thread's lock.

A load reads the thread's budget, its newest summary and up to 200 completed
entries after that summary. Under the threshold it answers at once. Over it,
it takes the thread's compression lock, re-reads (another load, maybe on
another replica, may have stored a summary meanwhile, which is then reused),
and asks the summarizer. The summarizer's failures never reach the caller: they
become a truncated answer with a diagnostic.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from opentelemetry.trace import Span
from sqlalchemy.ext.asyncio import AsyncConnection

from pioneer_grpc.caps import ID, text_violation
from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.history import decide
from pioneer_grpc.history import diagnostics as codes
from pioneer_grpc.history.budget import MAX_LOADED_TURNS, Budget
from pioneer_grpc.history.entries import thread_id_violation
from pioneer_grpc.history.render import summary_text
from pioneer_grpc.history.summarizers import Summarizer, SummarizerError, SummaryRequest
from pioneer_grpc.history.tokens import count_tokens
from pioneer_grpc.service import observe
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.store import entries as entry_store
from pioneer_grpc.store import summaries as summary_store
from pioneer_grpc.store.history_state import HistoryState, history_state
from pioneer_grpc.store.locks import compression_lock
from pioneer_grpc.telemetry import tracing
from pioneer_grpc.v1 import chat_pb2, history_pb2

log = logging.getLogger(__name__)

# Slack on top of the summarizer's own worst case (timeout x tries + backoff) before a waiter gives up.
LOCK_SLACK_SECONDS = 10.0


def _summarizer_deadline(ctx: ServiceContext) -> float:
    tries = ctx.config.summarizer_retries + 1
    return ctx.config.summarizer_timeout_seconds * tries + 0.5 * 2.0**tries + LOCK_SLACK_SECONDS


def _stored(row: Any) -> decide.StoredSummary | None:
    if row is None:
        return None
    return decide.StoredSummary(
        text=row.text,
        token_count=row.token_count,
        covers_through_entry_id=row.covers_through_entry_id,
        covers_through_sequence=row.covers_through_sequence,
        summarizer=row.summarizer,
        model=row.model,
    )


async def read_snapshot(ctx: ServiceContext, thread_id: str, exclude_turn_id: str) -> decide.Snapshot:
    async with ctx.engine.connect() as conn:
        return await _snapshot(conn, thread_id, exclude_turn_id, await history_state(conn, thread_id))


async def _snapshot(
    conn: AsyncConnection, thread_id: str, exclude_turn_id: str, state: HistoryState
) -> decide.Snapshot:
    summary = (
        None
        if state.summary_id is None
        else _stored(await summary_store.summary_by_id(conn, state.summary_id))
    )
    after = summary.covers_through_sequence if summary else 0
    entries, more = await entry_store.completed_entries(
        conn, thread_id, after, exclude_turn_id, MAX_LOADED_TURNS
    )
    return decide.Snapshot.read(
        Budget.of(state.max_context_tokens, state.response_reserve_tokens),
        summary,
        entries,
        more_entries=more,
        model=state.model,
        summary_model=state.summary_model,
    )


async def load_history(
    ctx: ServiceContext, thread_id: str, exclude_turn_id: str = "", dry_run: bool = False
) -> tuple[list[chat_pb2.ChatMessage], history_pb2.HistoryDecisionReport]:
    """The messages to send for the thread's history, and the report that explains them.

    `exclude_turn_id` leaves out a turn (the one in progress). `dry_run` stores
    nothing and calls no summarizer: over the threshold it reports a pending
    compression and shows the truncation fallback.
    """
    InvalidArgument.raise_if(
        [thread_id_violation(thread_id), text_violation("exclude_turn_id", exclude_turn_id, ID)]
    )
    with ctx.telemetry.span("pioneer.history.load", {tracing.THREAD_ID: thread_id}) as span:
        result = await _load(ctx, thread_id, exclude_turn_id, dry_run)
        observe.history_loaded(ctx, span, result.report)
    return result.messages, result.report


async def _load(
    ctx: ServiceContext, thread_id: str, exclude_turn_id: str, dry_run: bool
) -> decide.LoadResult:
    key = (thread_id, exclude_turn_id)
    async with ctx.engine.connect() as conn:
        state = await history_state(conn, thread_id)
        cached = ctx.load_cache.get(key, state)
        if cached is not None:
            return cached
        # Same connection, so on SQLite the snapshot matches `state` (one read transaction).
        snapshot = await _snapshot(conn, thread_id, exclude_turn_id, state)
    if not snapshot.needs_compression:
        result = decide.full(snapshot)
        # `state` was read first: if the thread moved on since, this pairing only ever misses.
        ctx.load_cache.put(key, state, result)
        return result
    summarizer = ctx.summarizer
    if dry_run:
        return decide.pending(snapshot, summarizer.name)
    wait = _summarizer_deadline(ctx)
    async with compression_lock(ctx.engine, thread_id, wait) as held:
        if not held:
            return decide.truncated(
                snapshot,
                history_pb2.SUMMARY_USE_NONE,
                summarizer.name,
                [
                    decide.diagnostic(
                        codes.SUMMARY_LOCK_TIMEOUT,
                        f"another load kept compressing this thread for over {wait:g} s; not compressed",
                    )
                ],
            )
        fresh = await read_snapshot(ctx, thread_id, exclude_turn_id)
        if fresh.summary != snapshot.summary and not fresh.needs_compression:
            return decide.full(
                fresh,
                [
                    decide.diagnostic(
                        codes.SUMMARY_STORED_MEANWHILE, "another load stored a summary; reused it"
                    )
                ],
            )
        return await _compress(ctx, fresh, summarizer, thread_id, wait)


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
    [tokens] = await count_tokens([summary_text(text)])
    covers_id, covers_sequence = snapshot.covers_through
    return decide.StoredSummary(
        text=text,
        token_count=tokens,
        covers_through_entry_id=covers_id,
        covers_through_sequence=covers_sequence,
        summarizer=summarizer,
        model=model,
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


async def _compress(
    ctx: ServiceContext, snapshot: decide.Snapshot, summarizer: Summarizer, thread_id: str, wait: float
) -> decide.LoadResult:
    request = SummaryRequest(
        entries=snapshot.entries,
        previous_summary=snapshot.summary.text if snapshot.summary else "",
        target_tokens=snapshot.budget.target,
        model=snapshot.summary_model or snapshot.model,
    )

    def failed(code: str, message: str) -> decide.LoadResult:
        return decide.truncated(
            snapshot, history_pb2.SUMMARY_USE_FAILED, summarizer.name, [decide.diagnostic(code, message)]
        )

    with ctx.telemetry.span("pioneer.history.summarize", {tracing.SUMMARIZER: summarizer.name}) as span:
        started = time.perf_counter()
        text, failure, message = await _ask(summarizer, request, thread_id, wait)
        seconds = time.perf_counter() - started
        candidate = None
        if not failure:
            candidate = await _candidate(text, snapshot, summarizer.name, request.model)
            rejection = decide.summary_rejection(candidate.cost, snapshot)
            if rejection is not None:
                failure, message = "rejected", f"{summarizer.name}: {rejection}"
        _summarized(ctx, span, summarizer.name, seconds, failure)
    if candidate is None or failure:
        return failed(codes.SUMMARY_REJECTED if failure == "rejected" else codes.SUMMARIZER_FAILED, message)
    async with ctx.sessions() as session:
        await summary_store.add_summary(
            session,
            thread_id,
            text=candidate.text,
            token_count=candidate.token_count,
            covers_through_entry_id=candidate.covers_through_entry_id,
            covers_through_sequence=candidate.covers_through_sequence,
            model=candidate.model,
            summarizer=candidate.summarizer,
        )
    return decide.summarized(snapshot, candidate, summarizer.name)
