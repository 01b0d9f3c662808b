"""LoadConversationHistory: read, decide, and compress under the thread's lock.

A load reads the thread's budget, its newest summary and the newest 200
completed turns after that summary, repaired (history/repair.py). Under the
threshold it answers at once. Over it, what needs no summarizer is settled
first (clearing old tool results, the truncate strategy, a deferred compaction:
service/history_compaction.py); otherwise it takes the thread's compression
lock, re-reads (another load, maybe on another replica, may have stored a
summary meanwhile, which is then reused), and asks the summarizer. The
summarizer's failures never reach the caller: they become a truncated answer
with a diagnostic.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy.engine import Connection

from pioneer_grpc.caps import ID, text_violation
from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.history import decide
from pioneer_grpc.history import diagnostics as codes
from pioneer_grpc.history.budget import MAX_LOADED_TURNS, Budget
from pioneer_grpc.history.clearing import effective_keep, effective_strategy
from pioneer_grpc.history.entries import thread_id_violation
from pioneer_grpc.service import history_compaction as compaction
from pioneer_grpc.service import history_current, load_counts, observe, token_fit
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.load_cache import CachedLoad
from pioneer_grpc.store import entries as entry_store
from pioneer_grpc.store import summaries as summary_store
from pioneer_grpc.store.history_state import (
    NO_ENTRIES,
    HistoryRead,
    HistoryState,
    history_read_in,
)
from pioneer_grpc.store.locks import compression_lock
from pioneer_grpc.store.runner import nothing
from pioneer_grpc.telemetry import tracing
from pioneer_grpc.v1 import chat_pb2, history_pb2

log = logging.getLogger(__name__)

# Slack on top of the summarizer's own worst case (timeout x tries + backoff) before a waiter gives up.
LOCK_SLACK_SECONDS = 10.0


def _summarizer_deadline(ctx: ServiceContext) -> float:
    tries = ctx.config.summarizer_retries + 1
    return ctx.config.summarizer_timeout_seconds * tries + 0.5 * 2.0**tries + LOCK_SLACK_SECONDS


def _stored(row: Any, token_count: int | None, tokenizer: str) -> decide.StoredSummary | None:
    """The summary row as the load uses it, its count in `tokenizer` (load_counts)."""
    if row is None or token_count is None:
        return None
    return decide.StoredSummary(
        text=row.text,
        token_count=token_count,
        covers_through_entry_id=row.covers_through_entry_id,
        covers_through_sequence=row.covers_through_sequence,
        summarizer=row.summarizer,
        model=row.model,
        tokenizer=tokenizer,
    )


@dataclass(frozen=True)
class _Read:
    """What a load read: the summary row (None without one), the entries after it, whether more exist."""

    summary: Any
    entries: list[history_pb2.ConversationEntry]
    more: bool


async def read_snapshot(ctx: ServiceContext, thread_id: str, exclude_turn_id: str) -> decide.Snapshot:
    """The thread read whole, in a unit of work of the store's runner (the counts a load makes
    in another tokenizer are stored)."""

    def work(conn: Connection, _: None) -> decide.Snapshot:
        state = history_read_in(conn, thread_id).state
        return _snapshot_on(ctx, conn, thread_id, exclude_turn_id, state)

    snapshot, _ = await ctx.runner.transact(nothing, work)
    return snapshot


def _snapshot_on(
    ctx: ServiceContext, conn: Connection, thread_id: str, exclude_turn_id: str, state: HistoryState
) -> decide.Snapshot:
    """What a load leaving out `exclude_turn_id` reads, after `state` was read on `conn`."""
    summary = None if state.summary_id is None else summary_store.summary_by_id_in(conn, state.summary_id)
    after = summary.covers_through_sequence if summary is not None else 0
    excluded = exclude_turn_id
    entries, more = entry_store.completed_entries_in(conn, thread_id, after, excluded, MAX_LOADED_TURNS)
    tokenizer = token_fit.counting_for(ctx.models, state.model).tokenizer
    summary_tokens = load_counts.fill_in(conn, tokenizer, entries, summary)
    return _snapshot_of(ctx, state, _Read(summary, entries, more), summary_tokens)


def _snapshot_of(
    ctx: ServiceContext, state: HistoryState, read: _Read, summary_tokens: int | None
) -> decide.Snapshot:
    """The snapshot of a read whose counts are in the thread model's tokenizer, attachments added."""
    attached = token_fit.with_attachments(ctx.models, state.model, read.entries)
    tokenizer = token_fit.counting_for(ctx.models, state.model).tokenizer
    snapshot = decide.Snapshot.read(
        Budget.of(
            state.max_context_tokens,
            state.response_reserve_tokens,
            state.compaction_trigger_percent,
            state.compaction_low_water_percent,
            state.clear_at_least_percent,
        ),
        _stored(read.summary, summary_tokens, tokenizer),
        read.entries,
        more_entries=read.more,
        model=state.model,
        summary_model=state.summary_model,
        strategy=effective_strategy(state.compaction_strategy),
        keep_tool_results=effective_keep(state.keep_tool_results),
        failed_sequence=state.compaction_failed_sequence,
        attachment_notes=attached.notes,
        attached_tokens=attached.tokens,
    )
    return token_fit.counted(ctx.models, snapshot)


@dataclass(frozen=True)
class OverThreshold:
    """A load that read more than the threshold: what it read, and the key its answer is kept under."""

    snapshot: decide.Snapshot
    state: HistoryState
    key: str


def full_load_on(
    ctx: ServiceContext, conn: Connection, thread_id: str, key: str, state: HistoryState
) -> CachedLoad | OverThreshold:
    """The full load of the thread leaving out turn `key` (a turn with completed entries, else ""),
    on a synchronous connection (store/runner.py), `state` read before on it; kept when under the
    threshold. The one full load of a round and of LoadConversationHistory.

    When the thread moved on between `state` and the reads, what is kept pairs newer rows
    with an older state: it is never found again, and never extended (history_current.py).
    """
    cached = ctx.load_cache.find(thread_id, key, state)
    if cached is not None:
        return cached
    snapshot = _snapshot_on(ctx, conn, thread_id, key, state)
    if snapshot.needs_compression:
        return OverThreshold(snapshot, state, key)
    result = decide.full(snapshot)
    return ctx.load_cache.store(thread_id, key, state, snapshot, result, extendable=not key)


def kept_through(ctx: ServiceContext, thread_id: str) -> int:
    """The sequence after which a state read asks for completed entries: the newest of the thread's
    kept history that later entries may extend (none asked for without one)."""
    return _through(ctx.load_cache.extendable(thread_id))


def _through(base: CachedLoad | None) -> int:
    return NO_ENTRIES if base is None else base.through


def kept_on(
    ctx: ServiceContext,
    conn: Connection,
    thread_id: str,
    exclude_turn_id: str,
    read: HistoryRead | None = None,
) -> tuple[CachedLoad | None, HistoryRead]:
    """The kept answer for the thread as it is now, if any, and what the state statement read.

    One statement reads the state and the entries completed after the kept history's
    newest; those extend it when they are all that changed (history_current.py). `read`,
    made earlier in the transaction (a round's, with the thread's lock), is used when it
    asked for what this would ask.
    """
    base = ctx.load_cache.extendable(thread_id)
    after = _through(base)
    if read is None or (read.exclude_turn_id, read.after) != (exclude_turn_id, after):
        read = history_read_in(conn, thread_id, exclude_turn_id, after)
    found = ctx.load_cache.find(thread_id, exclude_turn_id, read.state)
    if found is None and base is not None:
        current = history_current.extended(ctx, thread_id, base, read)
        if current is not None and current.serves(exclude_turn_id):
            found = current
    return found, read


@dataclass(frozen=True)
class Settled:
    """A load over the threshold answered outside a transaction (a summarizer may have been asked),
    and the thread's history state after it: the answer while the state is that one."""

    state: HistoryState
    result: CachedLoad | decide.LoadResult


async def settle(ctx: ServiceContext, thread_id: str, exclude_turn_id: str, read: OverThreshold) -> Settled:
    """`over_threshold`'s answer to `read`, and the state it leaves (read in one statement after it)."""
    result = await over_threshold(ctx, thread_id, exclude_turn_id, False, read)

    def state_on(conn: Connection) -> HistoryState:
        return history_read_in(conn, thread_id, exclude_turn_id, NO_ENTRIES).state

    return Settled(await ctx.runner.read(state_on), result)


def history_on(
    ctx: ServiceContext,
    conn: Connection,
    thread_id: str,
    exclude_turn_id: str,
    settled: Settled | None = None,
    read: HistoryRead | None = None,
) -> tuple[CachedLoad | OverThreshold | decide.LoadResult, tuple[int, int]]:
    """The history a load leaving out `exclude_turn_id` answers (kept, brought current, or read whole;
    `settled` where the thread's state is still the one it was settled in), and the (entries, turns)
    of other turns not completed that it leaves out. `read` as `kept_on` takes it."""
    found, read = kept_on(ctx, conn, thread_id, exclude_turn_id, read)
    if settled is not None and settled.state == read.state:
        return settled.result, read.left_out
    if found is None:
        # Leaving out a turn without completed entries changes nothing: the answer that excludes
        # nothing serves every such turn.
        key = exclude_turn_id if read.excluded_completed else ""
        return full_load_on(ctx, conn, thread_id, key, read.state), read.left_out
    return found, read.left_out


async def load_history(
    ctx: ServiceContext, thread_id: str, exclude_turn_id: str = "", dry_run: bool = False
) -> tuple[list[chat_pb2.ChatMessage], history_pb2.HistoryDecisionReport]:
    """The messages to send for the thread's history, and the report that explains them.

    `exclude_turn_id` leaves out a turn (the one in progress). `dry_run` stores
    nothing and calls no summarizer: over the threshold it reports a pending
    compression and shows the truncation fallback.
    """
    answer = await load_history_result(ctx, thread_id, exclude_turn_id, dry_run)
    result = answer.result.copy() if isinstance(answer.result, CachedLoad) else answer.result
    if not answer.left_out:
        return result.messages, result.report
    report = history_pb2.HistoryDecisionReport()
    report.CopyFrom(result.report)  # a load's answer may be shared: never change it in place
    report.diagnostics.extend(answer.left_out)
    return result.messages, report


def left_out(entries: int, turns: int) -> list[history_pb2.HistoryDiagnostic]:
    """The diagnostic for `entries` of `turns` not completed, left out of a load (none when 0)."""
    if not entries:
        return []
    return [
        decide.diagnostic(
            codes.INCOMPLETE_TURNS_LEFT_OUT,
            f"{entries} {'entry' if entries == 1 else 'entries'} of {turns} "
            f"{'turn' if turns == 1 else 'turns'} not completed {'is' if entries == 1 else 'are'} left out; "
            "CompleteTurn a turn to include it in history",
        )
    ]


@dataclass(frozen=True)
class LoadAnswer:
    result: CachedLoad | decide.LoadResult
    # What the load leaves out besides the excluded turn: entries of turns not completed.
    # Kept apart from `result`, which is shared between callers while no completed entry changes.
    left_out: list[history_pb2.HistoryDiagnostic]


async def load_history_result(
    ctx: ServiceContext, thread_id: str, exclude_turn_id: str = "", dry_run: bool = False
) -> LoadAnswer:
    """`load_history`, answering with the shared cached load (messages already encoded) when there is one."""
    InvalidArgument.raise_if(
        [thread_id_violation(thread_id), text_violation("exclude_turn_id", exclude_turn_id, ID)]
    )
    with ctx.telemetry.span("pioneer.history.load", {tracing.THREAD_ID: thread_id}) as span:
        kept, incomplete = await ctx.runner.read(partial(_kept_answer_on, ctx, thread_id, exclude_turn_id))
        found: CachedLoad | OverThreshold | None = kept
        if found is None:
            found = await _full_load(ctx, thread_id, exclude_turn_id)
        if isinstance(found, CachedLoad):
            result: CachedLoad | decide.LoadResult = found
            report = found.result.report
        else:
            result = await over_threshold(ctx, thread_id, exclude_turn_id, dry_run, found)
            report = result.result.report if isinstance(result, CachedLoad) else result.report
        observe.history_loaded(ctx, span, report)
    return LoadAnswer(result, left_out(*incomplete))


def _kept_answer_on(
    ctx: ServiceContext, thread_id: str, exclude_turn_id: str, conn: Connection
) -> tuple[CachedLoad | None, tuple[int, int]]:
    """The answer kept for the thread's state (brought current if it can be), if any, and what a
    load leaves out: one statement, in one hop to the store's thread on SQLite (store/runner.py)."""
    found, read = kept_on(ctx, conn, thread_id, exclude_turn_id)
    return found, read.left_out


async def _full_load(ctx: ServiceContext, thread_id: str, exclude_turn_id: str) -> CachedLoad | OverThreshold:
    """Read whole, in a transaction of the store's runner: a load may store the counts it made."""

    def work(conn: Connection, _: None) -> CachedLoad | OverThreshold:
        found = history_on(ctx, conn, thread_id, exclude_turn_id)[0]
        assert not isinstance(found, decide.LoadResult)  # only a settled answer is one
        return found

    found, _ = await ctx.runner.transact(nothing, work)
    return found


async def over_threshold(
    ctx: ServiceContext, thread_id: str, exclude_turn_id: str, dry_run: bool, read: OverThreshold
) -> CachedLoad | decide.LoadResult:
    """A load at the threshold or the turn cap: clear or defer without a summarizer when the strategy
    says so (kept, like a full answer), else compact under the thread's lock (a summary, or the
    truncate strategy's mark)."""
    snapshot = read.snapshot
    # Clearing and a deferred compaction are pure functions of what was read: cacheable. A history
    # cleared enough is kept current by the turns completed after it (history_current.py).
    found = await compaction.settled(ctx, snapshot, dry_run)
    if found is not None:
        if dry_run:
            return found.result
        cleared = found.ready if found.cleared_enough and not read.key else None
        return ctx.load_cache.store(
            thread_id,
            read.key,
            read.state,
            snapshot,
            found.result,
            extendable=cleared is not None,
            cleared=cleared,
        )
    wait = _summarizer_deadline(ctx)
    async with compression_lock(ctx.engine, thread_id, wait) as held:
        if not held:
            return decide.truncated(
                (await compaction.prepared(snapshot)).snapshot,
                history_pb2.SUMMARY_USE_NONE,
                ctx.summarizer.name,
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
        if fresh.summary != snapshot.summary or fresh.failed_sequence != snapshot.failed_sequence:
            settled = await compaction.without_summarizer(ctx, fresh, dry_run=False)
            if settled is not None:
                return settled
        return await compaction.compress(ctx, fresh, thread_id, exclude_turn_id, wait)
