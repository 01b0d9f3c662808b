"""A round's provider usage: what the loop reports, against what the server expected of its body.

Every round a PrepareTurn commits has its row on the thread's timeline from its commit (service/
turn.py: its time, provider, model, history decision and prefix break). A loop hands the usage the
provider returned for a round's body with its next call on the same turn (PrepareTurn or
CompleteTurn `previous_round_usage`): it belongs to the turn's previous round, and fills in that
round's row. This keeps, per thread, the last round this server prepared (and the one before it,
with the same retry rule as the prefix breaks: a PrepareTurn sent again is the same round): its
manifest event, how many of the turn's own messages it sent, the provider and model, its prefix
break and the body as rendered (a reference: rendered JSON is never written in place). When usage
for it comes, the provider cache model (providers/cache_model.py) says what the provider's cache
should have served of that body with the round before it cached, the registry's prices cost both,
and the round's row in the store is filled in (store/round_usage.py): the same on every worker and
after a restart. A round this server did not prepare (a restart, another worker) is recorded in a
row of its own by its turn's manifest event, with what was expected left unknown.

Nothing here runs for a loop that reports no usage but keeping two references per thread.
"""

from __future__ import annotations

import asyncio
from dataclasses import fields

from pioneer_grpc import reasons
from pioneer_grpc.caps import violations_of
from pioneer_grpc.caps.history import DEFAULT_ROUND_USAGE_PAGE, MAX_TIMELINE_PAGE
from pioneer_grpc.errors import FailedPrecondition, FieldViolation, InvalidArgument, NotFound
from pioneer_grpc.history.entries import thread_id_violation
from pioneer_grpc.models.registry import ModelInfo
from pioneer_grpc.providers.cache_model import BLOCKS, expected_round, input_cost
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.paging import PageSize, decode_token, encode_token
from pioneer_grpc.service.recent_rounds import SeenRound
from pioneer_grpc.service.tenancy import thread_key
from pioneer_grpc.store import clock
from pioneer_grpc.store.port import RoundPrepared, RoundUsageRecord
from pioneer_grpc.v1 import history_pb2, manifest_service_pb2, provider_service_pb2, usage_pb2

# The model label of a model the registry does not know: the metric's labels stay bounded.
OTHER_MODEL = "other"
TIMELINE_PAGE = PageSize(default=MAX_TIMELINE_PAGE, maximum=MAX_TIMELINE_PAGE)


def usage_violations(usage: usage_pb2.ProviderUsage, field: str) -> list[FieldViolation]:
    """The usage's parts against its wholes; every count from 0."""
    out = []
    for name in ("input_tokens", "cache_read_input_tokens", "cache_write_input_tokens", "output_tokens"):
        if getattr(usage, name) < 0:
            out.append(
                FieldViolation(f"{field}.{name}", f"must be at least 0 (got {getattr(usage, name):,})")
            )
    if usage.reasoning_output_tokens < 0:
        out.append(FieldViolation(f"{field}.reasoning_output_tokens", "must be at least 0"))
    cached = usage.cache_read_input_tokens + usage.cache_write_input_tokens
    if not out and cached > usage.input_tokens:
        for name in ("cache_read_input_tokens", "cache_write_input_tokens"):
            if usage.HasField(name):
                out.append(
                    FieldViolation(
                        f"{field}.{name}",
                        f"cache reads and writes ({cached:,}) are parts of input_tokens "
                        f"({usage.input_tokens:,}) and cannot exceed it",
                    )
                )
    if not out and usage.reasoning_output_tokens > usage.output_tokens:
        out.append(
            FieldViolation(
                f"{field}.reasoning_output_tokens",
                f"is a part of output_tokens ({usage.output_tokens:,}) and cannot exceed it",
            )
        )
    return out


async def turn_has_round(ctx: ServiceContext, thread_id: str, turn_id: str) -> None:
    """FailedPrecondition NO_PREVIOUS_ROUND unless the turn had a round (this server's memory, else
    the turn's manifest); NotFound for an unknown thread."""
    last = ctx.recent_rounds.last(thread_key(thread_id))
    if last is not None and last.turn_id == turn_id:
        return
    try:
        await ctx.store.manifests.turn_manifest(thread_id, turn_id)
    except NotFound as exc:
        if exc.reason == reasons.THREAD_NOT_FOUND:
            raise
        raise FailedPrecondition(
            f"turn {turn_id!r} of thread {thread_id!r} has had no round to report usage for: report a "
            "round's usage with the next call on the same turn",
            reason=reasons.NO_PREVIOUS_ROUND,
            metadata={"thread_id": thread_id, "turn_id": turn_id},
        ) from exc


def provider_label(provider: int) -> str:
    if provider == provider_service_pb2.PROVIDER_UNSPECIFIED:
        return "unknown"
    return provider_service_pb2.Provider.Name(provider).removeprefix("PROVIDER_").lower()


def prepared_round(
    turn_message_count: int,
    provider: int,
    model: str,
    history_decision: int,
    broke: history_pb2.PrefixBreak | None,
) -> RoundPrepared:
    """A round's row on the thread's timeline as its commit writes it, its break (None: the prefix
    held, or not known) in the row's columns."""
    broke = broke or history_pb2.PrefixBreak()
    return RoundPrepared(
        turn_message_count=turn_message_count,
        provider=provider,
        model=model,
        history_decision=history_decision,
        break_cause=broke.cause,
        break_detail=broke.section_id or broke.entry_id,
        break_tokens_invalidated=broke.tokens_invalidated,
        break_tokens_kept=broke.tokens_kept,
        break_entry_ids=tuple(broke.entry_ids),
        break_entry_count=broke.entry_count,
    )


def _expected(seen: SeenRound, info: ModelInfo | None) -> tuple[int, int, int] | None:
    if seen.body is None or info is None or info.prices is None or seen.provider not in BLOCKS:
        return None
    explicit = seen.provider in (
        provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES,
        provider_service_pb2.PROVIDER_AMAZON_BEDROCK_CONVERSE,
    )
    if explicit and info.cache_min_tokens is None:
        return None
    found = expected_round(seen.provider, info, seen.body_before, seen.body)
    return found.total, found.read, found.write


async def record(
    ctx: ServiceContext,
    thread_id: str,
    turn_id: str,
    seen: SeenRound | None,
    usage: usage_pb2.ProviderUsage,
) -> None:
    """Stores `usage` with `seen` (None: the turn's round this server did not prepare) and counts it."""
    if seen is None or seen.turn_id != turn_id:
        found = await ctx.store.manifests.turn_manifest(thread_id, turn_id)
        seen = SeenRound(
            turn_id, 0, found.event_id, provider_service_pb2.PROVIDER_UNSPECIFIED, "", None, None
        )
    model = seen.model
    info = ctx.models.lookup(model) if model else None
    expected = await asyncio.to_thread(_expected, seen, info) if seen.body is not None else None
    read = usage.cache_read_input_tokens
    write = usage.cache_write_input_tokens
    prices = info.prices if info is not None else None
    expected_cost = None if expected is None or prices is None else input_cost(prices, *expected)
    reported_cost = None if prices is None else input_cost(prices, usage.input_tokens, read, write)
    prepared = prepared_round(
        seen.turn_message_count, seen.provider, model, seen.history_decision, seen.prefix_break
    )
    await ctx.store.usage.record(
        RoundUsageRecord(
            thread_id=thread_id,
            turn_id=turn_id,
            manifest_event_id=seen.manifest_event_id,
            input_tokens=usage.input_tokens,
            cache_read_input_tokens=read if usage.HasField("cache_read_input_tokens") else None,
            cache_write_input_tokens=write if usage.HasField("cache_write_input_tokens") else None,
            output_tokens=usage.output_tokens,
            reasoning_output_tokens=(
                usage.reasoning_output_tokens if usage.HasField("reasoning_output_tokens") else None
            ),
            expected_input_tokens=None if expected is None else expected[0],
            expected_cache_read_input_tokens=None if expected is None else expected[1],
            expected_cache_write_input_tokens=None if expected is None else expected[2],
            expected_input_cost_usd=expected_cost,
            reported_input_cost_usd=reported_cost,
            reported_at=clock.now(),
            **{f.name: getattr(prepared, f.name) for f in fields(RoundPrepared)},
        )
    )
    ctx.telemetry.metrics.provider_usage(
        provider_label(seen.provider),
        OTHER_MODEL if info is None else info.prefix,
        read,
        write,
        max(0, usage.input_tokens - read - write),
        usage.output_tokens,
    )


def as_message(found: RoundUsageRecord) -> usage_pb2.RoundUsage:
    out = usage_pb2.RoundUsage(
        turn_id=found.turn_id,
        manifest_event_id=found.manifest_event_id,
        turn_message_count=found.turn_message_count,
        provider=found.provider,  # type: ignore[arg-type]
        model=found.model,
    )
    if found.reported_at is not None:  # else no usage was reported for the round yet
        out.reported.input_tokens = found.input_tokens or 0
        out.reported.output_tokens = found.output_tokens or 0
        for name in ("cache_read_input_tokens", "cache_write_input_tokens", "reasoning_output_tokens"):
            value = getattr(found, name)
            if value is not None:
                setattr(out.reported, name, value)
        out.report_time.FromDatetime(clock.as_utc(found.reported_at))
    if found.prepared_at is not None:
        out.prepare_time.FromDatetime(clock.as_utc(found.prepared_at))
    for name in (
        "expected_input_tokens",
        "expected_cache_read_input_tokens",
        "expected_cache_write_input_tokens",
        "expected_input_cost_usd",
        "reported_input_cost_usd",
    ):
        value = getattr(found, name)
        if value is not None:
            setattr(out, name, value)
    if found.break_cause:
        broke = out.prefix_break
        broke.cause = found.break_cause  # type: ignore[assignment]
        if found.break_cause == history_pb2.PREFIX_BREAK_CAUSE_SECTION:
            broke.section_id = found.break_detail
        else:
            broke.entry_id = found.break_detail
        broke.tokens_invalidated = found.break_tokens_invalidated
        broke.tokens_kept = found.break_tokens_kept
        broke.entry_ids.extend(found.break_entry_ids)
        broke.entry_count = found.break_entry_count
    return out


async def list_round_usage(
    ctx: ServiceContext, request: manifest_service_pb2.ListRoundUsageRequest
) -> manifest_service_pb2.ListRoundUsageResponse:
    InvalidArgument.raise_if([thread_id_violation(request.thread_id), *violations_of(request)])
    await ctx.store.threads.get(request.thread_id)  # NotFound for an unknown thread
    found = await ctx.store.usage.thread_rounds(
        request.thread_id, request.page_size or DEFAULT_ROUND_USAGE_PAGE
    )
    return manifest_service_pb2.ListRoundUsageResponse(rounds=[as_message(r) for r in found])


async def list_timeline(
    ctx: ServiceContext, request: manifest_service_pb2.ListThreadTimelineRequest
) -> manifest_service_pb2.ListThreadTimelineResponse:
    """A page of the thread's rounds (committed, or reported), oldest first, each with its number
    among them all; a round without reported usage has no `reported`."""
    InvalidArgument.raise_if([thread_id_violation(request.thread_id), *violations_of(request)])
    size = TIMELINE_PAGE.of(request.page_size)
    scope = f"timeline:{request.thread_id}:{int(request.breaks_only)}"
    after = decode_token(request.page_token, scope)
    after_round = 0 if after is None else int(after[0])
    await ctx.store.threads.get(request.thread_id)  # NotFound for an unknown thread
    found, rounds, breaks = await ctx.store.usage.timeline(
        request.thread_id, after_round, size + 1, request.breaks_only
    )
    page = found[:size]
    answer = manifest_service_pb2.ListThreadTimelineResponse(
        rounds=[
            manifest_service_pb2.TimelineRound(
                round=number,
                usage=as_message(record),
                history_decision=record.history_decision,  # type: ignore[arg-type]
            )
            for number, record in page
        ],
        total_rounds=rounds,
        total_breaks=breaks,
    )
    if len(found) > size:
        answer.next_page_token = encode_token(scope, [page[-1][0]])
    return answer
