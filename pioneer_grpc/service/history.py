"""History use cases: threads, appends, turn completion, summaries, token counts.

Every function takes the ServiceContext and domain messages, returns domain
messages (never a `*Response`), raises domain errors (pioneer_grpc.errors), and
commits its own transactions:

    thread = await create_thread(ctx, "", ThreadConfig(model="m"))
    outcome = await append_entries(ctx, thread_id, [ConversationEntry(...), ...])
    await complete_turn(ctx, thread_id, turn_id)
    messages, report = await load_history(ctx, thread_id, exclude_turn_id=turn_id)
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from types import SimpleNamespace
from typing import Any

from sqlalchemy.engine import Connection

from pioneer_grpc.adapters.count_tokens import CountFailed, Endpoint
from pioneer_grpc.caps import text_violation, violations_of, violations_of_each
from pioneer_grpc.caps.history import (
    MAX_COUNT_MESSAGES,
    MAX_COUNT_TEXTS,
    MAX_ENTRIES_PER_APPEND,
    MAX_MASK_PATHS,
)
from pioneer_grpc.caps.table import CONTENT
from pioneer_grpc.errors import FieldViolation, InvalidArgument
from pioneer_grpc.history.budget import (
    DEFAULT_MAX_CONTEXT_TOKENS,
    DEFAULT_RESPONSE_RESERVE_TOKENS,
    config_violations,
    policy_violations,
)
from pioneer_grpc.history.clearing import compaction_violations
from pioneer_grpc.history.entries import content_hash, entry_violations, id_violation, thread_id_violation
from pioneer_grpc.history.entry_rules import StoredCalls, call_violations, content_violations, named_call_ids
from pioneer_grpc.history.parts import media_refs
from pioneer_grpc.history.render import chat_counted_texts, entry_counted_texts
from pioneer_grpc.history.tokens import MESSAGE_OVERHEAD, count_blocking
from pioneer_grpc.models.attachments import attachment_tokens
from pioneer_grpc.models.registry import Registry
from pioneer_grpc.service import token_fit
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.history_load import LoadAnswer, load_history, load_history_result
from pioneer_grpc.store import append as append_store
from pioneer_grpc.store import completion
from pioneer_grpc.store import entries as entry_store
from pioneer_grpc.store import round as round_store
from pioneer_grpc.store import summaries as summary_store
from pioneer_grpc.store import threads as thread_store
from pioneer_grpc.store.runner import OnLoop, nothing
from pioneer_grpc.telemetry import tracing
from pioneer_grpc.v1 import chat_pb2, history_pb2

__all__ = [
    "LoadAnswer",
    "append_entries",
    "complete_turn",
    "count_tokens_of",
    "create_thread",
    "get_summary",
    "get_thread",
    "load_history",
    "load_history_result",
    "update_thread",
]

CONFIG_PATHS = (
    "max_context_tokens",
    "response_reserve_tokens",
    "model",
    "summary_model",
    "compaction_strategy",
    "keep_tool_results",
    "compaction_trigger_percent",
    "compaction_low_water_percent",
    "clear_at_least_percent",
    "dynamic_context_placement",
)
# Optional fields whose default (None) the store resolves.
_OPTIONAL_PATHS = thread_store.OPTIONAL_SETTINGS
_INT_PATHS = {
    "max_context_tokens": DEFAULT_MAX_CONTEXT_TOKENS,
    "response_reserve_tokens": DEFAULT_RESPONSE_RESERVE_TOKENS,
}


_check = InvalidArgument.raise_if
# Up to this encoded size an append's `prepare` (checks, hashes, counts) runs on the event loop on
# PostgreSQL rather than hop to a worker thread (store/runner.py, OnLoop), as a small round's does:
# it then takes well under a millisecond, less than the hop.
_ON_LOOP_BATCH_BYTES = 32 * 1024
_log = logging.getLogger(__name__)


def model_budget(models: Registry, model: str) -> tuple[int, int]:
    """(max_context_tokens, response_reserve_tokens) a new thread of `model` gets by default."""
    info = models.lookup(model)
    if info is None:
        return DEFAULT_MAX_CONTEXT_TOKENS, DEFAULT_RESPONSE_RESERVE_TOKENS
    return info.context_window, info.response_reserve


async def create_thread(
    ctx: ServiceContext, thread_id: str, config: history_pb2.ThreadConfig
) -> history_pb2.Thread:
    """Client-chosen id, or a generated one when `thread_id` is empty.

    Retrying with the same id and config answers the stored thread; AlreadyExists
    only when the id is taken with a different config.

    A budget field the caller leaves unset comes from the model registry (the
    model's window; its maximum output, at most an eighth of the window), or,
    for a model the registry does not know, from the original's defaults.
    """
    window, reserve = model_budget(ctx.models, config.model)
    settings = thread_store.ThreadSettings(
        max_context_tokens=config.max_context_tokens if config.HasField("max_context_tokens") else window,
        response_reserve_tokens=(
            config.response_reserve_tokens if config.HasField("response_reserve_tokens") else reserve
        ),
        model=config.model,
        summary_model=config.summary_model,
        compaction_strategy=config.compaction_strategy,
        dynamic_context_placement=config.dynamic_context_placement,
        **{name: getattr(config, name) if config.HasField(name) else None for name in _OPTIONAL_PATHS},
    )
    _check(
        [
            thread_id_violation(thread_id) if thread_id else None,
            *violations_of(config, "config"),
            *config_violations(settings.max_context_tokens, settings.response_reserve_tokens),
            *_settings_violations(settings.__dict__),
        ]
    )
    thread_id = thread_id or f"thr_{uuid.uuid4().hex}"
    work = _unit(thread_store.create_thread_in, thread_id, settings)
    (row, entries), _ = await ctx.runner.transact(nothing, work)
    return thread_store.thread_message(row, entries)


def _settings_violations(settings: dict[str, Any]) -> list[FieldViolation]:
    """What is wrong with a thread's compaction settings and placement (budget aside)."""
    placement = settings["dynamic_context_placement"]
    return [
        *compaction_violations(settings["compaction_strategy"], settings["keep_tool_results"]),
        *policy_violations(
            settings["compaction_trigger_percent"],
            settings["compaction_low_water_percent"],
            settings["clear_at_least_percent"],
        ),
        *(
            [FieldViolation("config.dynamic_context_placement", f"unknown placement {placement}")]
            if placement not in chat_pb2.DynamicContextPlacement.values()
            else []
        ),
    ]


def _unit(use: Callable[..., Any], *args: Any) -> Callable[[Connection, None], Any]:
    """`use(conn, *args)` as the work of a unit of the store's runner."""
    return lambda conn, _: use(conn, *args)


async def get_thread(ctx: ServiceContext, thread_id: str) -> history_pb2.Thread:
    _check([thread_id_violation(thread_id)])
    row, entries = await ctx.runner.read(partial(_thread, thread_id))
    return thread_store.thread_message(row, entries)


def _thread(thread_id: str, conn: Connection) -> tuple[Any, int]:
    return thread_store.thread_in(conn, thread_id)


def _mask_paths(config: history_pb2.ThreadConfig, paths: Sequence[str]) -> list[str]:
    if not paths:
        return [
            p
            for p in CONFIG_PATHS
            if (config.HasField(p) if p in _INT_PATHS or p in _OPTIONAL_PATHS else getattr(config, p))
        ]
    if len(paths) > MAX_MASK_PATHS:
        raise InvalidArgument.field(
            "update_mask.paths", f"at most {MAX_MASK_PATHS} items (got {len(paths):,})"
        )
    named = [p.removeprefix("config.") for p in paths]
    known = ", ".join(CONFIG_PATHS)
    _check(
        [
            FieldViolation(f"update_mask.paths[{i}]", f"unknown path {p!r}; use {known}")
            for i, p in enumerate(named)
            if p not in CONFIG_PATHS
        ]
    )
    return named


async def update_thread(
    ctx: ServiceContext, thread_id: str, config: history_pb2.ThreadConfig, paths: Sequence[str]
) -> history_pb2.Thread:
    """Sets the masked ThreadConfig fields (a masked but unset field goes back to its model's default).

    An empty mask means every field set in `config`; the merged result must be a valid budget.
    """
    _check([thread_id_violation(thread_id), *violations_of(config, "config")])
    masked = _mask_paths(config, paths)

    def changes_for(current: thread_store.ThreadSettings) -> dict[str, Any]:
        changes: dict[str, Any] = {
            p: getattr(config, p) for p in masked if p not in _INT_PATHS and p not in _OPTIONAL_PATHS
        }
        for path in masked:
            if path in _OPTIONAL_PATHS:
                changes[path] = getattr(config, path) if config.HasField(path) else None
        budget = model_budget(ctx.models, changes.get("model", current.model))
        defaults = dict(zip(_INT_PATHS, budget, strict=True))
        for path in masked:
            if path in _INT_PATHS:
                changes[path] = getattr(config, path) if config.HasField(path) else defaults[path]
        merged = {**current.__dict__, **changes}
        _check(
            [
                *config_violations(merged["max_context_tokens"], merged["response_reserve_tokens"]),
                *_settings_violations(merged),
            ]
        )
        return changes

    # A move to a model of another family recounts nothing here: the first load in the
    # new tokenizer counts what it reads, once, and stores it (service/load_counts.py).
    work = _unit(thread_store.update_thread_in, thread_id, changes_for)
    (row, entries), _ = await ctx.runner.transact(nothing, work)
    return thread_store.thread_message(row, entries)


async def append_entries(
    ctx: ServiceContext,
    thread_id: str,
    entries: Sequence[history_pb2.ConversationEntry],
    prefix: str = "entries",
    *,
    with_entries: bool = True,
    complete_turn_id: str = "",
) -> entry_store.AppendOutcome:
    """Stores the batch in one transaction, idempotent by entry_id; tokens are counted here, once.

    Refuses (INVALID_ARGUMENT, fields named `{prefix}[i]...`, nothing stored) what
    would make a later round fail: see `history/entry_rules.py`. Checking, hashing
    and counting are the unit of work's `prepare`, before its transaction and off the
    event loop unless the batch is small (one at its caps is megabytes of text). Without `with_entries`
    the outcome carries the counts only (nothing is read back). With
    `complete_turn_id` that turn is completed in the same transaction.
    """
    counted_in = token_fit.likely_tokenizer(ctx.models, ctx.load_cache, thread_id)
    counted_model = token_fit.likely_model(ctx.load_cache, thread_id)
    checked = partial(_checked_and_counted, thread_id, entries, prefix, counted_in)
    work = partial(
        _append_in, ctx, thread_id, entries, prefix, with_entries, counted_in, counted_model, complete_turn_id
    )
    try:
        with ctx.telemetry.span(
            "pioneer.history.append", {tracing.THREAD_ID: thread_id, tracing.ENTRIES_APPENDED: len(entries)}
        ):
            outcome, _ = await ctx.runner.transact(checked, work, on_loop=_on_loop(entries))
            return outcome
    except _ContentRefused as refused:
        # Rejected anyway: read the thread's calls too, so every violation is named at once.
        stored = await ctx.runner.read(partial(_stored_calls, thread_id, entries))
        _check([*refused.violations, *call_violations(entries, stored, prefix)])
        raise AssertionError("unreachable: content violations are refused") from None


def _on_loop(entries: Sequence[history_pb2.ConversationEntry]) -> OnLoop[entry_store.AppendOutcome]:
    return OnLoop(prepare=sum(entry.ByteSize() for entry in entries) <= _ON_LOOP_BATCH_BYTES)


class _ContentRefused(Exception):
    """The batch breaks content rules: refused before its transaction began, with the calls' rules
    still to check against what the thread stores."""

    def __init__(self, violations: list[FieldViolation]) -> None:
        super().__init__("content rules")
        self.violations = violations


def _checked_and_counted(
    thread_id: str, entries: Sequence[history_pb2.ConversationEntry], prefix: str, tokenizer: str
) -> list[entry_store.NewEntry]:
    """The append's `prepare` (blocking): every check that needs no stored row, then the entries
    hashed and counted."""
    content = _checked_content(thread_id, entries, prefix)
    if content:
        raise _ContentRefused(content)
    return _hashed_and_counted(entries, tokenizer)


def _stored_calls(
    thread_id: str, entries: Sequence[history_pb2.ConversationEntry], conn: Connection
) -> StoredCalls:
    return entry_store.stored_calls_in(conn, thread_id, entries)


def _append_in(
    ctx: ServiceContext,
    thread_id: str,
    entries: Sequence[history_pb2.ConversationEntry],
    prefix: str,
    with_entries: bool,
    counted_in: str,
    counted_model: str | None,
    complete_turn_id: str,
    conn: Connection,
    counted: list[entry_store.NewEntry],
) -> entry_store.AppendOutcome:
    """The append's unit of work: the thread locked, the batch's turns locked or created, the
    entries stored by the append a round makes (store/append.py); with `complete_turn_id`, that
    turn completed in the same transaction (store/completion.py)."""
    # The thread locked, then the batch's turns with their entries; the thread's calls of the batch's
    # ids read with the first turn, in the lock's statement. On PostgreSQL a batch of one turn is
    # inserted by that statement too, when the thread's model is the one it was counted for.
    turn_ids = list(dict.fromkeys(e.turn_id for e in entries))
    turns: dict[str, round_store.LockedTurn] = {}
    batch = append_store.batch_of(thread_id, counted, counted_in) if entries else None
    carried = batch if ctx.manifests.postgres and len(turn_ids) == 1 and counted_model else None
    inserted = None
    if turn_ids:
        # On PostgreSQL that statement completes the turn too, when it inserts the batch.
        locked, turns[turn_ids[0]], inserted = round_store.lock_thread_and_turn(
            conn,
            thread_id,
            turn_ids[0],
            named_call_ids(entries),
            carried,
            counted_model,
            complete=turn_ids == [complete_turn_id],
        )
    else:
        locked = round_store.lock_thread(conn, thread_id)
    for turn_id in turn_ids[1:]:
        turns[turn_id] = round_store.lock_turn_with_entries(conn, thread_id, turn_id, ())
    batch = token_fit.in_thread_tokenizer(ctx.models, thread_id, locked.model, batch, counted_in, inserted)

    def check(stored: StoredCalls) -> None:
        _check(call_violations(entries, stored, prefix))

    created = []
    if batch is not None:
        created = append_store.append_rows(
            conn,
            thread_id,
            {turn_id: turn.record for turn_id, turn in turns.items()},
            batch,
            check,
            {turn_id: turn.entries for turn_id, turn in turns.items()},
            next(iter(turns.values())).thread_calls,
            inserted,
        )
    ids = [entry.entry_id for entry in entries]
    completed = 0
    if complete_turn_id:  # by the lock's statement, or now, after the append
        by_lock = turns[complete_turn_id].completed
        completed = (
            completion.completed_under_lock(conn, thread_id, complete_turn_id) if by_lock is None else by_lock
        )
    outcome = entry_store.AppendOutcome([], len(created), len(ids) - len(created), completed)
    if with_entries:
        outcome.entries.extend(_answered_entries(conn, thread_id, ids, created, complete_turn_id))
    return outcome


def _answered_entries(
    conn: Connection,
    thread_id: str,
    ids: Sequence[str],
    created: Sequence[tuple[int, dict[str, Any]]],
    complete_turn_id: str,
) -> list[history_pb2.ConversationEntry]:
    """The batch's entries as stored, in its order: those it created from the rows as written (what a
    read of them gives, tests/history/test_append_answer.py), those stored before read back."""
    by_id: dict[str, history_pb2.ConversationEntry] = {}
    for sequence, row in created:
        # The turn completed in this transaction has its entries completed, as a read would see them.
        completed = row["completed"] or row["turn_id"] == complete_turn_id
        row_read = SimpleNamespace(**{**row, "completed": completed}, id=sequence)
        by_id.setdefault(row["entry_id"], entry_store.entry_message(row_read))
    stored = [entry_id for entry_id in dict.fromkeys(ids) if entry_id not in by_id]
    if stored:
        by_id.update((e.entry_id, e) for e in entry_store.stored_entries_in(conn, thread_id, stored))
    return [by_id[entry_id] for entry_id in ids]


def _checked_content(
    thread_id: str, entries: Sequence[history_pb2.ConversationEntry], prefix: str
) -> list[FieldViolation]:
    """Caps first, then each entry on its own; returns the content rules' violations. Blocking."""
    _check([thread_id_violation(thread_id), *violations_of_each(entries, prefix, MAX_ENTRIES_PER_APPEND)])
    _check(entry_violations(list(entries), prefix))
    return content_violations(entries, prefix)


def _hashed_and_counted(
    entries: Sequence[history_pb2.ConversationEntry], tokenizer: str
) -> list[entry_store.NewEntry]:
    """Each entry with its content hash and token count in `tokenizer`. Blocking."""
    texts_per_entry = [entry_counted_texts(entry) for entry in entries]
    counts = count_blocking([text for texts in texts_per_entry for text in texts], tokenizer)
    new_entries: list[entry_store.NewEntry] = []
    offset = 0
    for entry, texts in zip(entries, texts_per_entry, strict=True):
        tokens = sum(counts[offset : offset + len(texts)])
        offset += len(texts)
        new_entries.append(entry_store.NewEntry(entry, content_hash(entry), tokens))
    return new_entries


async def complete_turn(
    ctx: ServiceContext,
    thread_id: str,
    turn_id: str,
    entries: Sequence[history_pb2.ConversationEntry] = (),
) -> entry_store.AppendOutcome:
    """Appends `entries` (AppendEntries' rules; an empty turn_id is `turn_id`) and marks the turn's
    entries completed, in one unit of work (store/completion.py); the outcome has the counts only.
    NotFound for an unknown turn (one the entries do not start)."""
    _check([thread_id_violation(thread_id), id_violation("turn_id", turn_id, "turn_id")])
    if not entries:
        # One statement alone on PostgreSQL, and only when it wrote nothing a transaction.
        alone = await ctx.runner.alone(partial(_completed_alone, thread_id, turn_id))
        if alone is not None:
            return entry_store.AppendOutcome([], 0, 0, alone)
        count, _ = await ctx.runner.transact(nothing, partial(_complete_turn, thread_id, turn_id))
        return entry_store.AppendOutcome([], 0, 0, count)
    if len(entries) <= MAX_ENTRIES_PER_APPEND:  # else the append names the cap
        _check(
            [
                FieldViolation(f"entries[{i}].turn_id", f"must be empty or this turn's id {turn_id!r}")
                for i, entry in enumerate(entries)
                if entry.turn_id not in ("", turn_id)
            ]
        )
    own: list[history_pb2.ConversationEntry] = []
    for entry in entries:
        copy = history_pb2.ConversationEntry()
        copy.CopyFrom(entry)
        copy.turn_id = turn_id
        own.append(copy)
    return await append_entries(ctx, thread_id, own, with_entries=False, complete_turn_id=turn_id)


def _completed_alone(thread_id: str, turn_id: str, conn: Connection) -> int | None:
    return completion.completed_alone(conn, thread_id, turn_id)


def _complete_turn(thread_id: str, turn_id: str, conn: Connection, _: None) -> int:
    return completion.complete_turn_in(conn, thread_id, turn_id)


async def get_summary(ctx: ServiceContext, thread_id: str) -> history_pb2.ThreadSummary | None:
    _check([thread_id_violation(thread_id)])
    row = await ctx.runner.read(partial(_latest_summary, thread_id))
    return None if row is None else summary_store.summary_message(row)


def _latest_summary(thread_id: str, conn: Connection) -> Any:
    thread_store.thread_in(conn, thread_id)  # NotFound for an unknown thread
    return summary_store.latest_summary_in(conn, thread_id)


@dataclass(frozen=True)
class TokenCounts:
    counts: list[int]
    tokenizer: str
    exact: bool
    # Why the provider's own count was not used (empty when it was, or when none is configured).
    fallback_reason: str = ""


async def count_tokens_of(
    ctx: ServiceContext, texts: Sequence[str], messages: Sequence[chat_pb2.ChatMessage], model: str = ""
) -> TokenCounts:
    """Texts counted bare; messages as history counts them (artifact block, tool calls, +4 overhead).

    In `model`'s tokenizer (the model registry); cl100k_base for an empty or unknown model.
    """
    counting = token_fit.counting_for(ctx.models, model)
    counts = await asyncio.to_thread(_counts_blocking, texts, messages, counting.tokenizer)
    # Images and documents the messages attach and carry, by the model's provider rule, as a load
    # counts an entry's (token_fit.with_attachments). Only sized ones (an inline image's header, an
    # inline document's bytes, a ref's sizes): this answer has no report to name an assumed size in.
    rule = ctx.models.image_rule(model)
    attached = [0] * len(texts) + [
        attachment_tokens(
            rule, [*m.artifact_refs, *media_refs(f"messages[{i}]", m.content_parts)], sized_only=True
        ).tokens
        for i, m in enumerate(messages)
    ]
    endpoint = _endpoint_for(ctx, model)
    if endpoint is None or ctx.token_counter is None:
        return TokenCounts(_plus(counts, attached), counting.tokenizer, counting.exact)
    # Each message as the one text a history counts for it (its framing is the provider's to count).
    message_texts = ["\n".join(chat_counted_texts(message)) for message in messages]
    try:
        exact = await ctx.token_counter.count(endpoint, model, [*texts, *message_texts])
    except CountFailed as exc:
        _log.warning("provider token count failed, the estimate is returned: %s", exc)
        estimate = _plus(counts, attached)
        return TokenCounts(estimate, counting.tokenizer, counting.exact, fallback_reason=str(exc))
    return TokenCounts(_plus(exact, attached), endpoint.tokenizer, True)


def _plus(counts: Sequence[int], attached: Sequence[int]) -> list[int]:
    return [count + extra for count, extra in zip(counts, attached, strict=True)]


def _endpoint_for(ctx: ServiceContext, model: str) -> Endpoint | None:
    info = ctx.models.lookup(model)
    if info is None or ctx.token_counter is None:
        return None
    return ctx.token_counter.for_provider(info.provider)


def _counts_blocking(
    texts: Sequence[str], messages: Sequence[chat_pb2.ChatMessage], tokenizer: str
) -> list[int]:
    _check([*_texts_violations(texts), *violations_of_each(messages, "messages", MAX_COUNT_MESSAGES)])
    per_message = [chat_counted_texts(message) for message in messages]
    counts = count_blocking([*texts, *(t for group in per_message for t in group)], tokenizer)
    result = counts[: len(texts)]
    offset = len(texts)
    for group in per_message:
        result.append(sum(counts[offset : offset + len(group)]) + MESSAGE_OVERHEAD)
        offset += len(group)
    return result


def _texts_violations(texts: Sequence[str]) -> list[FieldViolation]:
    if len(texts) > MAX_COUNT_TEXTS:
        return [FieldViolation("texts", f"at most {MAX_COUNT_TEXTS:,} items (got {len(texts):,})")]
    found = (text_violation(f"texts[{i}]", text, CONTENT) for i, text in enumerate(texts))
    return [v for v in found if v is not None]
