"""What the model saw, kept on request: each PrepareTurn round's compiled prompt, messages and body.

Off by default (keep_rendered_requests). When off, PrepareTurn does not call in
here at all; when on, a round costs one more small transaction after its
answer is ready, and ListRenderedRounds reads them back. Bounded per thread, in
total bytes and by age (store/rendered_rounds.py applies the bounds at each
keep). A round that cannot be kept (the database refuses) is dropped with a
warning that names no content: the round itself was committed and stands.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import TYPE_CHECKING

from pioneer_grpc.caps import violations_of
from pioneer_grpc.errors import InvalidArgument, PioneerError
from pioneer_grpc.history.entries import id_violation, thread_id_violation
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.store import clock
from pioneer_grpc.store.port import RenderedBounds
from pioneer_grpc.v1 import manifest_service_pb2, turn_service_pb2

if TYPE_CHECKING:
    from pioneer_grpc.service.turn import PreparedTurn

log = logging.getLogger(__name__)


def bounds(ctx: ServiceContext) -> RenderedBounds:
    config = ctx.config
    return RenderedBounds(
        rounds_per_thread=config.kept_rounds_per_thread,
        total_bytes=config.kept_bytes_total,
        max_age=timedelta(seconds=config.kept_max_age_seconds),
    )


def rendered_round(prepared: PreparedTurn) -> manifest_service_pb2.RenderedRound:
    record = manifest_service_pb2.RenderedRound(
        manifest_event_id=prepared.manifest_event_id,
        compiled_prompt=prepared.chat_head.compiled_prompt,
        history_report=prepared.history_report,
        messages=prepared.chat_request.messages,
    )
    if prepared.rendered is not None:
        record.provider_path = prepared.rendered.path
        record.provider_body_json = bytes(prepared.rendered.body).decode("utf-8", "replace")
    return record


async def keep(
    ctx: ServiceContext, request: turn_service_pb2.PrepareTurnRequest, prepared: PreparedTurn
) -> None:
    """Keeps the round (called by PrepareTurn after its round committed, only when keeping is on)."""
    data = rendered_round(prepared).SerializeToString()
    limits = bounds(ctx)
    if len(data) > limits.total_bytes:
        log.warning("a rendered round of %d bytes is larger than kept_bytes_total; not kept", len(data))
        return
    try:
        await ctx.store.rendered.keep(
            request.thread_id, request.turn_id, prepared.manifest_event_id, data, clock.now(), limits
        )
    except PioneerError as exc:
        log.warning("a rendered round was not kept: %s", exc.reason)


async def list_rendered_rounds(
    ctx: ServiceContext, request: manifest_service_pb2.ListRenderedRoundsRequest
) -> manifest_service_pb2.ListRenderedRoundsResponse:
    InvalidArgument.raise_if(
        [
            thread_id_violation(request.thread_id),
            id_violation("turn_id", request.turn_id),
            *violations_of(request),
        ]
    )
    config = ctx.config
    response = manifest_service_pb2.ListRenderedRoundsResponse(
        kept=config.keep_rendered_requests,
        max_rounds_per_thread=config.kept_rounds_per_thread,
        max_total_bytes=config.kept_bytes_total,
        max_age_seconds=int(config.kept_max_age_seconds),
    )
    if not config.keep_rendered_requests:
        return response
    not_before = clock.now() - timedelta(seconds=config.kept_max_age_seconds)
    kept = await ctx.store.rendered.turn_rounds(request.thread_id, request.turn_id, not_before)
    for found in kept:
        record = response.rounds.add()
        record.MergeFromString(found.round_pb)
        record.round = found.round
        record.kept_bytes = len(found.round_pb)
        record.create_time.FromDatetime(clock.as_utc(found.created_at))
    return response
