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
from collections.abc import Sequence
from dataclasses import dataclass

from pioneer_grpc.adapters.count_tokens import CountFailed, Endpoint
from pioneer_grpc.caps import text_violation, violations_of, violations_of_each
from pioneer_grpc.caps.history import (
    MAX_COUNT_MESSAGES,
    MAX_COUNT_TEXTS,
    MAX_ENTRIES_PER_APPEND,
    MAX_MASK_PATHS,
)
from pioneer_grpc.caps.table import CONTENT
from pioneer_grpc.errors import Aborted, FieldViolation, InvalidArgument
from pioneer_grpc.history.budget import (
    DEFAULT_MAX_CONTEXT_TOKENS,
    DEFAULT_RESPONSE_RESERVE_TOKENS,
    config_violations,
    policy_violations,
)
from pioneer_grpc.history.clearing import compaction_violations
from pioneer_grpc.history.entries import content_hash, entry_violations, id_violation, thread_id_violation
from pioneer_grpc.history.entry_rules import call_violations, content_violations
from pioneer_grpc.history.parts import media_refs
from pioneer_grpc.history.render import chat_counted_texts, entry_counted_texts
from pioneer_grpc.history.tokens import MESSAGE_OVERHEAD, count_blocking
from pioneer_grpc.models.attachments import attachment_tokens
from pioneer_grpc.models.registry import Registry
from pioneer_grpc.service import quotas, round_usage, token_fit
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.history_load import LoadAnswer, blocking, load_history, load_history_result
from pioneer_grpc.service.tenancy import thread_key
from pioneer_grpc.store.port import (
    OPTIONAL_SETTINGS,
    AppendBatch,
    AppendOutcome,
    Conflict,
    NewEntry,
    Recount,
)
from pioneer_grpc.telemetry import tracing
from pioneer_grpc.v1 import chat_pb2, history_pb2, usage_pb2

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
    "retention_days",
)
# Optional fields whose default (None) the store resolves.
_OPTIONAL_PATHS = OPTIONAL_SETTINGS
_INT_PATHS = {
    "max_context_tokens": DEFAULT_MAX_CONTEXT_TOKENS,
    "response_reserve_tokens": DEFAULT_RESPONSE_RESERVE_TOKENS,
}


_check = InvalidArgument.raise_if
# Up to this encoded size an append's checks, hashes and counts run on the event loop rather than hop
# to a worker thread, as a small round's do: they then take well under a millisecond, less than the hop.
_ON_LOOP_BATCH_BYTES = 32 * 1024
# Times UpdateThread reads the thread again when another update changed it meanwhile.
_UPDATE_ATTEMPTS = 8
# A thread's retention, in days: a hundred years.
MAX_RETENTION_DAYS = 36_500
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
    resolved = history_pb2.ThreadConfig(
        max_context_tokens=config.max_context_tokens if config.HasField("max_context_tokens") else window,
        response_reserve_tokens=(
            config.response_reserve_tokens if config.HasField("response_reserve_tokens") else reserve
        ),
        model=config.model,
        summary_model=config.summary_model,
        compaction_strategy=config.compaction_strategy,
        dynamic_context_placement=config.dynamic_context_placement,
    )
    for name in _OPTIONAL_PATHS:
        if config.HasField(name):
            setattr(resolved, name, getattr(config, name))
    _check(
        [
            thread_id_violation(thread_id) if thread_id else None,
            *violations_of(config, "config"),
            *config_violations(resolved.max_context_tokens, resolved.response_reserve_tokens),
            *_settings_violations(resolved),
        ]
    )
    thread_id = thread_id or f"thr_{uuid.uuid4().hex}"
    await quotas.check_new_thread(ctx, thread_id)
    thread = await ctx.store.threads.create(thread_id, resolved)
    ctx.seen_models.put(thread_key(thread.thread_id), thread.config.model)
    return thread


def retention_violations(days: int | None, path: str = "config.retention_days") -> list[FieldViolation]:
    if days is None or 0 <= days <= MAX_RETENTION_DAYS:
        return []
    return [FieldViolation(path, f"must be 0 (keep forever) to {MAX_RETENTION_DAYS:,} days, got {days}")]


def _optional(config: history_pb2.ThreadConfig, name: str) -> int | None:
    value: int | None = getattr(config, name) if config.HasField(name) else None
    return value


def _settings_violations(config: history_pb2.ThreadConfig) -> list[FieldViolation]:
    """What is wrong with a thread's compaction settings and placement (budget aside)."""
    placement = config.dynamic_context_placement
    return [
        *compaction_violations(config.compaction_strategy, _optional(config, "keep_tool_results")),
        *policy_violations(
            _optional(config, "compaction_trigger_percent"),
            _optional(config, "compaction_low_water_percent"),
            _optional(config, "clear_at_least_percent"),
        ),
        *(
            [FieldViolation("config.dynamic_context_placement", f"unknown placement {placement}")]
            if placement not in chat_pb2.DynamicContextPlacement.values()
            else []
        ),
        *retention_violations(_optional(config, "retention_days")),
    ]


async def get_thread(ctx: ServiceContext, thread_id: str) -> history_pb2.Thread:
    _check([thread_id_violation(thread_id)])
    thread = await ctx.store.threads.get(thread_id)
    ctx.seen_models.put(thread_key(thread_id), thread.config.model)
    return thread


def _mask_paths(
    config: history_pb2.ThreadConfig, paths: Sequence[str], mask: str = "update_mask"
) -> list[str]:
    if not paths:
        return [
            p
            for p in CONFIG_PATHS
            if (config.HasField(p) if p in _INT_PATHS or p in _OPTIONAL_PATHS else getattr(config, p))
        ]
    if len(paths) > MAX_MASK_PATHS:
        raise InvalidArgument.field(f"{mask}.paths", f"at most {MAX_MASK_PATHS} items (got {len(paths):,})")
    named = [p.removeprefix("config.") for p in paths]
    known = ", ".join(CONFIG_PATHS)
    _check(
        [
            FieldViolation(f"{mask}.paths[{i}]", f"unknown path {p!r}; use {known}")
            for i, p in enumerate(named)
            if p not in CONFIG_PATHS
        ]
    )
    return named


def config_with(
    ctx: ServiceContext,
    current: history_pb2.ThreadConfig,
    config: history_pb2.ThreadConfig,
    paths: Sequence[str],
    mask: str,
) -> history_pb2.ThreadConfig:
    """`current` with the fields of `config` that `paths` (field `mask`) name, as UpdateThread sets them;
    INVALID_ARGUMENT when the result is not a valid budget."""
    _check(violations_of(config, "config"))
    return _merged(ctx, current, config, _mask_paths(config, paths, mask))


def stored_config_violations(config: history_pb2.ThreadConfig, prefix: str) -> list[FieldViolation]:
    """What is wrong with a config every setting of which is resolved (an imported thread's)."""
    return [
        *violations_of(config, prefix),
        *config_violations(config.max_context_tokens, config.response_reserve_tokens),
        *_settings_violations(config),
    ]


async def update_thread(
    ctx: ServiceContext, thread_id: str, config: history_pb2.ThreadConfig, paths: Sequence[str]
) -> history_pb2.Thread:
    """Sets the masked ThreadConfig fields (a masked but unset field goes back to its model's default).

    An empty mask means every field set in `config`; the merged result must be a valid budget.
    """
    _check([thread_id_violation(thread_id), *violations_of(config, "config")])
    masked = _mask_paths(config, paths)
    # A move to a model of another family recounts nothing here: the first load in the
    # new tokenizer counts what it reads, once, and the store keeps it (service/load_counts.py).
    for _ in range(_UPDATE_ATTEMPTS):
        current = (await ctx.store.threads.get(thread_id)).config
        updated = await ctx.store.threads.update(thread_id, _merged(ctx, current, config, masked), current)
        if not isinstance(updated, Conflict):
            ctx.seen_models.put(thread_key(thread_id), updated.config.model)
            return updated
    raise Aborted(
        f"thread {thread_id!r} kept changing while this update was made; nothing was changed: send it again"
    )


def _merged(
    ctx: ServiceContext,
    current: history_pb2.ThreadConfig,
    config: history_pb2.ThreadConfig,
    masked: Sequence[str],
) -> history_pb2.ThreadConfig:
    """`current` with the masked fields of `config` (a masked but unset field back to its model's
    default); INVALID_ARGUMENT when the result is not a valid budget."""
    merged = history_pb2.ThreadConfig()
    merged.CopyFrom(current)
    for path in masked:
        if path not in _INT_PATHS and path not in _OPTIONAL_PATHS:
            setattr(merged, path, getattr(config, path))
        elif path in _OPTIONAL_PATHS:
            if config.HasField(path):
                setattr(merged, path, getattr(config, path))
            else:
                merged.ClearField(path)
    budget = model_budget(ctx.models, merged.model)
    defaults = dict(zip(_INT_PATHS, budget, strict=True))
    for path in masked:
        if path in _INT_PATHS:
            setattr(merged, path, getattr(config, path) if config.HasField(path) else defaults[path])
    _check(
        [
            *config_violations(merged.max_context_tokens, merged.response_reserve_tokens),
            *_settings_violations(merged),
        ]
    )
    return merged


async def append_entries(
    ctx: ServiceContext,
    thread_id: str,
    entries: Sequence[history_pb2.ConversationEntry],
    prefix: str = "entries",
    *,
    with_entries: bool = True,
    complete_turn_id: str = "",
) -> AppendOutcome:
    """Stores the batch in one transaction, idempotent by entry_id; tokens are counted here, once.

    Refuses (INVALID_ARGUMENT, fields named `{prefix}[i]...`, nothing stored) what
    would make a later round fail: see `history/entry_rules.py`. Checking, hashing
    and counting come first, off the event loop unless the batch is small (one at its caps
    is megabytes of text), in the tokenizer of the model the thread was last seen with;
    the store asks for them again in another when the thread's model counts in it. Without
    `with_entries` the outcome carries the counts only (nothing is read back). With
    `complete_turn_id` that turn is completed in the same transaction.
    """
    counted_in = token_fit.likely_tokenizer(
        ctx.models, ctx.load_cache, ctx.seen_models, thread_key(thread_id)
    )
    counted_model = token_fit.likely_model(ctx.load_cache, ctx.seen_models, thread_key(thread_id))
    small = sum(entry.ByteSize() for entry in entries) <= _ON_LOOP_BATCH_BYTES
    with ctx.telemetry.span(
        "pioneer.history.append", {tracing.THREAD_ID: thread_id, tracing.ENTRIES_APPENDED: len(entries)}
    ):
        content = await blocking(lambda: _checked_content(thread_id, entries, prefix), off_loop=not small)
        await quotas.check_stored(ctx, thread_id, entries)
        if content:
            # Refused anyway: read the thread's calls too, so every violation is named at once.
            stored = await ctx.store.entries.stored_calls(thread_id, entries)
            _check([*content, *call_violations(entries, stored, prefix)])
        counted = await blocking(lambda: _hashed_and_counted(entries, counted_in), off_loop=not small)
        options = (prefix, with_entries, complete_turn_id)
        batch = AppendBatch(thread_id, counted, counted_in, counted_model, *options)
        outcome = await ctx.store.entries.append(batch)
        if isinstance(outcome, Recount):
            # The thread's model counts in another tokenizer than the guess: counted again in it.
            tokenizer = token_fit.counting_for(ctx.models, outcome.model).tokenizer
            recounted = await blocking(lambda: token_fit.recounted(counted, tokenizer), off_loop=not small)
            batch = AppendBatch(thread_id, recounted, tokenizer, outcome.model, *options)
            outcome = await ctx.store.entries.append(batch)
        if isinstance(outcome, Recount):
            raise Aborted(
                f"the model of thread {thread_id!r} kept changing while these entries were counted; "
                "nothing was stored: send them again"
            )
    ctx.seen_models.put(thread_key(thread_id), outcome.model)
    ctx.telemetry.metrics.failed_tool_results(outcome.failed_results)
    return outcome


def _checked_content(
    thread_id: str, entries: Sequence[history_pb2.ConversationEntry], prefix: str
) -> list[FieldViolation]:
    """Caps first, then each entry on its own; returns the content rules' violations. Blocking."""
    _check([thread_id_violation(thread_id), *violations_of_each(entries, prefix, MAX_ENTRIES_PER_APPEND)])
    _check(entry_violations(list(entries), prefix))
    return content_violations(entries, prefix)


def _hashed_and_counted(entries: Sequence[history_pb2.ConversationEntry], tokenizer: str) -> list[NewEntry]:
    """Each entry with its content hash and token count in `tokenizer`. Blocking."""
    texts_per_entry = [entry_counted_texts(entry) for entry in entries]
    counts = count_blocking([text for texts in texts_per_entry for text in texts], tokenizer)
    new_entries: list[NewEntry] = []
    offset = 0
    for entry, texts in zip(entries, texts_per_entry, strict=True):
        tokens = sum(counts[offset : offset + len(texts)])
        offset += len(texts)
        new_entries.append(NewEntry(entry, content_hash(entry), tokens))
    return new_entries


async def complete_turn(
    ctx: ServiceContext,
    thread_id: str,
    turn_id: str,
    entries: Sequence[history_pb2.ConversationEntry] = (),
    usage: usage_pb2.ProviderUsage | None = None,
) -> AppendOutcome:
    """Appends `entries` (AppendEntries' rules; an empty turn_id is `turn_id`) and marks the turn's
    entries completed, in one transaction; the outcome has the counts only. NotFound for an unknown
    turn (one the entries do not start). `usage`, the provider's for the turn's last round, is
    recorded once the turn is completed (service/round_usage.py)."""
    _check(
        [
            thread_id_violation(thread_id),
            id_violation("turn_id", turn_id, "turn_id"),
            *(round_usage.usage_violations(usage, "previous_round_usage") if usage is not None else ()),
        ]
    )
    if usage is None:
        return await _complete_turn(ctx, thread_id, turn_id, entries)
    await round_usage.turn_has_round(ctx, thread_id, turn_id)
    outcome = await _complete_turn(ctx, thread_id, turn_id, entries)
    await round_usage.record(ctx, thread_id, turn_id, ctx.recent_rounds.last(thread_key(thread_id)), usage)
    return outcome


async def _complete_turn(
    ctx: ServiceContext, thread_id: str, turn_id: str, entries: Sequence[history_pb2.ConversationEntry]
) -> AppendOutcome:
    if not entries:
        return AppendOutcome([], 0, 0, await ctx.store.turns.complete(thread_id, turn_id))
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


async def get_summary(ctx: ServiceContext, thread_id: str) -> history_pb2.ThreadSummary | None:
    _check([thread_id_violation(thread_id)])
    return await ctx.store.history.latest_summary(thread_id)


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
