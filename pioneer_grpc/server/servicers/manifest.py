"""ManifestService: a turn's manifest, the event stream, and manifest diffs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing

import grpc

from pioneer_grpc.errors import FieldViolation, InvalidArgument
from pioneer_grpc.events.queries import event_by_id, turn_manifest
from pioneer_grpc.events.watch import ManifestWatch
from pioneer_grpc.manifests.diff import diff_manifests
from pioneer_grpc.server.context import ServerContext
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from pioneer_grpc.v1 import manifest_service_pb2_grpc as service_grpc
from pioneer_grpc.v1 import prompt_pb2


def _require_turn(thread_id: str, turn_id: str, prefix: str = "") -> None:
    violations = [
        FieldViolation(f"{prefix}{name}", "must not be empty")
        for name, value in (("thread_id", thread_id), ("turn_id", turn_id))
        if not value
    ]
    if violations:
        raise InvalidArgument("; ".join(f"{v.field}: {v.description}" for v in violations), violations)


class ManifestServicer(service_grpc.ManifestServiceServicer):
    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx

    async def GetTurnManifest(
        self, request: service_pb2.GetTurnManifestRequest, context: grpc.aio.ServicerContext
    ) -> service_pb2.GetTurnManifestResponse:
        _require_turn(request.thread_id, request.turn_id)
        found = await turn_manifest(self.ctx.engine, request.thread_id, request.turn_id)
        return service_pb2.GetTurnManifestResponse(
            manifest=found.manifest,
            status=found.status,  # type: ignore[arg-type]
            event_id=found.event_id,
        )

    async def WatchManifests(
        self, request: service_pb2.WatchManifestsRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[service_pb2.WatchManifestsResponse]:
        if request.after_event_id < 0:
            raise InvalidArgument.field("after_event_id", "must not be negative")
        watch = ManifestWatch(
            self.ctx.hub,
            self.ctx.engine,
            thread_id=request.thread_id,
            after_event_id=request.after_event_id,
            live_only=request.live_only,
            heartbeat_seconds=self.ctx.config.heartbeat_seconds,
            queue_size=self.ctx.config.watch_queue_size,
        )
        # Drops the subscription even when the stream is abandoned while blocked on a write.
        context.add_done_callback(lambda _context: watch.close())
        async with aclosing(watch.stream()) as responses:
            async for response in responses:
                yield response

    async def DiffManifests(
        self, request: service_pb2.DiffManifestsRequest, context: grpc.aio.ServicerContext
    ) -> service_pb2.DiffManifestsResponse:
        base = await self._resolve(request.base, "base")
        target = await self._resolve(request.target, "target")
        return diff_manifests(base, target)

    async def _resolve(self, ref: service_pb2.ManifestRef, field: str) -> prompt_pb2.PromptManifest:
        kind = ref.WhichOneof("ref")
        if kind == "manifest":
            return ref.manifest
        if kind == "event_id":
            if ref.event_id <= 0:
                raise InvalidArgument.field(f"{field}.event_id", "must be a positive event id")
            return (await event_by_id(self.ctx.engine, ref.event_id)).manifest
        if kind == "turn":
            _require_turn(ref.turn.thread_id, ref.turn.turn_id, prefix=f"{field}.turn.")
            return (await turn_manifest(self.ctx.engine, ref.turn.thread_id, ref.turn.turn_id)).manifest
        raise InvalidArgument.field(field, "must name a turn, an event id or an inline manifest")
