"""LoadConversationHistory: read, decide, and compress under the thread's lock.

A load asks the store once (store/port.py `History.read`) for the thread's state, with
what this server keeps for the thread: when the state is the one an answer is kept
for, that answer is the answer; when only completed turns were added, the kept answer
is brought current with them (history_current.py); otherwise the store reads the
budget, the newest summary and the newest 200 completed turns after it, repaired
(history/repair.py). Under the threshold it answers at once. Over it, what needs no
summarizer is settled first (clearing old tool results, the truncate strategy, a
deferred compaction: service/history_compaction.py); otherwise it takes the thread's
compression lock, reads again (another load, maybe on another replica, may have stored
a summary meanwhile, which is then reused), and asks the summarizer. The summarizer's
failures never reach the caller: they become a truncated answer with a diagnostic.

The decisions are pure and run on the event loop, or in a worker thread when a whole
history was read; no storage is reached in between.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from pioneer_grpc.caps import ID, text_violation
from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.history import decide
from pioneer_grpc.history import diagnostics as codes
from pioneer_grpc.history.budget import MAX_LOADED_TURNS, Budget
from pioneer_grpc.history.clearing import effective_keep, effective_strategy
from pioneer_grpc.history.entries import thread_id_violation
from pioneer_grpc.history.tokens import with_encodings
from pioneer_grpc.service import history_compaction as compaction
from pioneer_grpc.service import history_current, load_counts, observe, token_fit
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.load_cache import CachedLoad
from pioneer_grpc.service.tenancy import thread_key
from pioneer_grpc.store.port import (
    Extendable,
    HistoryAsk,
    HistoryRead,
    HistoryState,
    KeptCounts,
    SummaryRead,
    WholeRead,
)
from pioneer_grpc.telemetry import tracing
from pioneer_grpc.v1 import chat_pb2, history_pb2

log = logging.getLogger(__name__)

# Slack on top of the summarizer's own worst case (timeout x tries + backoff) before a waiter gives up.
LOCK_SLACK_SECONDS = 10.0
T = TypeVar("T")


def _summarizer_deadline(ctx: ServiceContext) -> float:
    tries = ctx.config.summarizer_retries + 1
    return ctx.config.summarizer_timeout_seconds * tries + 0.5 * 2.0**tries + LOCK_SLACK_SECONDS


async def blocking(work: Callable[[], T], off_loop: bool) -> T:
    """`work()` (blocking, pure) on the event loop, or in a worker thread when `off_loop` (it reads a
    whole history, or a large request); an encoding it needs and this process has not loaded yet
    is loaded off the event loop first, and it runs again (history/tokens.py `with_encodings`)."""
    if off_loop:
        return await asyncio.to_thread(work)

    async def attempt() -> T:
        return work()

    return await with_encodings(attempt)


def _stored(
    summary: SummaryRead | None, token_count: int | None, tokenizer: str
) -> decide.StoredSummary | None:
    """The summary as the load uses it, its count in `tokenizer` (load_counts)."""
    if summary is None or token_count is None:
        return None
    return decide.StoredSummary(
        text=summary.text,
        token_count=token_count,
        covers_through_entry_id=summary.covers_through_entry_id,
        covers_through_sequence=summary.covers_through_sequence,
        summarizer=summary.summarizer,
        model=summary.model,
        tokenizer=tokenizer,
    )


def snapshot_of(
    ctx: ServiceContext, state: HistoryState, whole: WholeRead
) -> tuple[decide.Snapshot, KeptCounts]:
    """What a load decides from, of the whole history read with `state`, counted in the thread model's
    tokenizer, attachments added; and the counts made for it, for the store to keep. Blocking."""
    summary_tokens, counts = load_counts.fill_in(whole)
    attached = token_fit.with_attachments(ctx.models, state.model, whole.entries)
    tokenizer = token_fit.counting_for(ctx.models, state.model).tokenizer
    snapshot = decide.Snapshot.read(
        Budget.of(
            state.max_context_tokens,
            state.response_reserve_tokens,
            state.compaction_trigger_percent,
            state.compaction_low_water_percent,
            state.clear_at_least_percent,
        ),
        _stored(whole.summary, summary_tokens, tokenizer),
        whole.entries,
        more_entries=whole.more,
        model=state.model,
        summary_model=state.summary_model,
        strategy=effective_strategy(state.compaction_strategy),
        keep_tool_results=effective_keep(state.keep_tool_results),
        failed_sequence=state.compaction_failed_sequence,
        attachment_notes=attached.notes,
        attached_tokens=attached.tokens,
    )
    return token_fit.counted(ctx.models, snapshot), counts


async def read_snapshot(ctx: ServiceContext, thread_id: str, exclude_turn_id: str) -> decide.Snapshot:
    """The thread read whole (the counts a load makes in another tokenizer are kept)."""
    read = await ctx.store.history.read(HistoryAsk(thread_id, exclude_turn_id, max_turns=MAX_LOADED_TURNS))
    assert read.whole is not None
    snapshot, counts = await asyncio.to_thread(snapshot_of, ctx, read.state, read.whole)
    await ctx.store.history.keep_counts(counts)
    return snapshot


@dataclass(frozen=True)
class OverThreshold:
    """A load that read more than the threshold: what it read, and the key its answer is kept under."""

    snapshot: decide.Snapshot
    state: HistoryState
    key: str


def full_load_of(
    ctx: ServiceContext, thread_id: str, read: HistoryRead
) -> tuple[CachedLoad | OverThreshold, KeptCounts | None]:
    """The full load of the thread as `read` read it whole, leaving out its key turn (a turn with
    completed entries, else ""); kept when under the threshold; and counts to keep. The one full
    load of a round and of LoadConversationHistory. Blocking.

    When the thread moved on between the state and the rows read, what is kept pairs newer rows
    with an older state: it is never found again, and never extended (history_current.py).
    """
    whole = read.whole
    assert whole is not None
    cached = ctx.load_cache.find(thread_key(thread_id), whole.key, read.state)
    if cached is not None:
        return cached, None
    snapshot, counts = snapshot_of(ctx, read.state, whole)
    if snapshot.needs_compression:
        return OverThreshold(snapshot, read.state, whole.key), counts
    result = decide.full(snapshot)
    kept = ctx.load_cache.store(
        thread_key(thread_id), whole.key, read.state, snapshot, result, extendable=not whole.key
    )
    return kept, counts


def history_ask(ctx: ServiceContext, thread_id: str, exclude_turn_id: str) -> HistoryAsk:
    """What a load leaving out `exclude_turn_id` asks of the store, given what this server keeps: the
    states of its kept answers, and the one later completed entries may extend."""
    base = ctx.load_cache.extendable(thread_key(thread_id))
    return HistoryAsk(
        thread_id,
        exclude_turn_id,
        known=ctx.load_cache.states(thread_key(thread_id), exclude_turn_id),
        extend=None if base is None else Extendable(base.state, base.through),
        max_turns=MAX_LOADED_TURNS,
    )


def whole_ask(thread_id: str, exclude_turn_id: str) -> HistoryAsk:
    """A read of the whole history, whatever is kept."""
    return HistoryAsk(thread_id, exclude_turn_id, max_turns=MAX_LOADED_TURNS)


def kept_of(
    ctx: ServiceContext, thread_id: str, exclude_turn_id: str, read: HistoryRead
) -> CachedLoad | None:
    """The kept answer for the thread as `read` found it, if any: kept for its state, or the kept
    history brought current by the entries completed since, when those are all `read` holds and all
    that changed (history_current.py)."""
    found = ctx.load_cache.find(thread_key(thread_id), exclude_turn_id, read.state)
    base = ctx.load_cache.extendable(thread_key(thread_id))
    if found is None and base is not None and read.after == base.through:
        current = history_current.extended(ctx, thread_id, base, read)
        if current is not None and current.serves(exclude_turn_id):
            found = current
    return found


@dataclass(frozen=True)
class Settled:
    """A load over the threshold answered outside the round (a summarizer may have been asked), and
    the thread's history state after it: the answer while the state is that one."""

    state: HistoryState
    result: CachedLoad | decide.LoadResult


async def settle(ctx: ServiceContext, thread_id: str, exclude_turn_id: str, read: OverThreshold) -> Settled:
    """`over_threshold`'s answer to `read`, and the state it leaves (read after it)."""
    result = await over_threshold(ctx, thread_id, exclude_turn_id, False, read)
    after = await ctx.store.history.read(HistoryAsk(thread_id, exclude_turn_id, whole=False))
    return Settled(after.state, result)


def history_of(
    ctx: ServiceContext,
    thread_id: str,
    exclude_turn_id: str,
    read: HistoryRead,
    settled: Settled | None = None,
) -> tuple[CachedLoad | OverThreshold | decide.LoadResult | None, KeptCounts | None]:
    """The history a load leaving out `exclude_turn_id` answers from `read` (kept, brought current,
    or read whole; `settled` where the thread's state is still the one it was settled in), and the
    counts to keep. None when `read` holds too little (a kept answer was dropped meanwhile, or could
    not be brought current): read whole, then ask again. Blocking."""
    found = kept_of(ctx, thread_id, exclude_turn_id, read)
    if settled is not None and settled.state == read.state:
        return settled.result, None
    if found is None:
        # Leaving out a turn without completed entries changes nothing: the answer that excludes
        # nothing serves every such turn (kept for this state: brought current above, say, though
        # it does not serve the turn as the answer of a read that held every turn would).
        key = exclude_turn_id if read.excluded_completed else ""
        found = ctx.load_cache.find(thread_key(thread_id), key, read.state)
    if found is not None:
        return found, None
    if read.whole is None:
        return None, None
    return full_load_of(ctx, thread_id, read)


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
        found, incomplete = await _loaded(ctx, thread_id, exclude_turn_id)
        if isinstance(found, CachedLoad):
            result: CachedLoad | decide.LoadResult = found
            report = found.result.report
        else:
            result = await over_threshold(ctx, thread_id, exclude_turn_id, dry_run, found)
            report = result.result.report if isinstance(result, CachedLoad) else result.report
        observe.history_loaded(ctx, span, report)
    return LoadAnswer(result, left_out(*incomplete))


async def _loaded(
    ctx: ServiceContext, thread_id: str, exclude_turn_id: str
) -> tuple[CachedLoad | OverThreshold, tuple[int, int]]:
    """The kept or full answer, and what the load leaves out: one read of the store (and a second,
    whole, only when a kept answer could not be brought current after all)."""
    read = await ctx.store.history.read(history_ask(ctx, thread_id, exclude_turn_id))
    found, counts = await blocking(
        lambda: history_of(ctx, thread_id, exclude_turn_id, read), off_loop=read.whole is not None
    )
    if found is None:
        read = await ctx.store.history.read(whole_ask(thread_id, exclude_turn_id))
        found, counts = await blocking(
            lambda: history_of(ctx, thread_id, exclude_turn_id, read), off_loop=True
        )
    if counts:
        await ctx.store.history.keep_counts(counts)
    assert found is not None and not isinstance(found, decide.LoadResult)  # only a settled answer is one
    return found, read.left_out


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
            thread_key(thread_id),
            read.key,
            read.state,
            snapshot,
            found.result,
            extendable=cleared is not None,
            cleared=cleared,
        )
    wait = _summarizer_deadline(ctx)
    async with ctx.store.history.compression_lock(thread_id, wait) as held:
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
