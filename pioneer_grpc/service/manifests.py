"""Manifest use cases: a turn's manifest, a watch on the event stream, and manifest diffs."""

from __future__ import annotations

import asyncio

from pioneer_grpc.caps import ID, text_violation, violations_of
from pioneer_grpc.errors import FieldViolation, InvalidArgument
from pioneer_grpc.events.watch import ManifestWatch
from pioneer_grpc.history.entries import id_violation
from pioneer_grpc.manifests.diff import diff_manifests
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.tenancy import sees_every_tenant
from pioneer_grpc.store.port import TurnManifest
from pioneer_grpc.tenants import current_caller
from pioneer_grpc.v1 import manifest_service_pb2, prompt_pb2


def _require_turn(thread_id: str, turn_id: str, prefix: str = "") -> None:
    InvalidArgument.raise_if(
        [id_violation(f"{prefix}thread_id", thread_id), id_violation(f"{prefix}turn_id", turn_id)]
    )


async def get_turn_manifest(ctx: ServiceContext, thread_id: str, turn_id: str) -> TurnManifest:
    _require_turn(thread_id, turn_id)
    return await ctx.store.manifests.turn_manifest(thread_id, turn_id)


def open_watch(ctx: ServiceContext, thread_id: str, after_event_id: int, live_only: bool) -> ManifestWatch:
    """A watch from `after_event_id` on; the caller streams it and closes it when the stream ends."""
    InvalidArgument.raise_if(
        [
            FieldViolation("after_event_id", "must not be negative") if after_event_id < 0 else None,
            text_violation("thread_id", thread_id, ID),
        ]
    )
    return ManifestWatch(
        ctx.hub,
        ctx.store.manifests,
        tenant=None if sees_every_tenant() else current_caller().tenant,
        thread_id=thread_id,
        after_event_id=after_event_id,
        live_only=live_only,
        heartbeat_seconds=ctx.config.heartbeat_seconds,
        queue_size=ctx.config.watch_queue_size,
        queue_bytes=ctx.config.watch_queue_bytes,
    )


async def diff(
    ctx: ServiceContext, base: manifest_service_pb2.ManifestRef, target: manifest_service_pb2.ManifestRef
) -> manifest_service_pb2.DiffManifestsResponse:
    """Inline manifests are checked against their caps, then both compared, in a worker thread."""
    refs = {"base": base, "target": target}
    resolved = {field: await _resolve(ctx, ref, field) for field, ref in refs.items()}
    return await asyncio.to_thread(_checked_diff, refs, resolved)


def _checked_diff(
    refs: dict[str, manifest_service_pb2.ManifestRef], resolved: dict[str, prompt_pb2.PromptManifest]
) -> manifest_service_pb2.DiffManifestsResponse:
    InvalidArgument.raise_if(
        violation
        for field, ref in refs.items()
        if ref.WhichOneof("ref") == "manifest"
        for violation in violations_of(ref.manifest, f"{field}.manifest")
    )
    return diff_manifests(resolved["base"], resolved["target"])


async def _resolve(
    ctx: ServiceContext, ref: manifest_service_pb2.ManifestRef, field: str
) -> prompt_pb2.PromptManifest:
    kind = ref.WhichOneof("ref")
    if kind == "manifest":
        return ref.manifest
    if kind == "event_id":
        if ref.event_id <= 0:
            raise InvalidArgument.field(f"{field}.event_id", "must be a positive event id")
        return (await ctx.store.manifests.event(ref.event_id, every_tenant=sees_every_tenant())).manifest
    if kind == "turn":
        _require_turn(ref.turn.thread_id, ref.turn.turn_id, prefix=f"{field}.turn.")
        return (await ctx.store.manifests.turn_manifest(ref.turn.thread_id, ref.turn.turn_id)).manifest
    raise InvalidArgument.field(field, "must name a turn, an event id or an inline manifest")
