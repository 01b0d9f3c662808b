"""ManifestService: converts requests and delegates to service/manifests.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing

import grpc

from pioneer_grpc.service import manifests, rendered_rounds, round_usage
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from pioneer_grpc.v1 import manifest_service_pb2_grpc as service_grpc


class ManifestServicer(service_grpc.ManifestServiceServicer):
    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx

    async def GetTurnManifest(
        self, request: service_pb2.GetTurnManifestRequest, context: grpc.aio.ServicerContext
    ) -> service_pb2.GetTurnManifestResponse:
        found = await manifests.get_turn_manifest(self.ctx, request.thread_id, request.turn_id)
        return service_pb2.GetTurnManifestResponse(
            manifest=found.manifest,
            status=found.status,  # type: ignore[arg-type]
            event_id=found.event_id,
        )

    async def WatchManifests(
        self, request: service_pb2.WatchManifestsRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[service_pb2.WatchManifestsResponse]:
        watch = manifests.open_watch(self.ctx, request.thread_id, request.after_event_id, request.live_only)
        # Drops the subscription even when the stream is abandoned while blocked on a write.
        context.add_done_callback(lambda _context: watch.close())
        async with aclosing(watch.stream()) as responses:
            async for response in responses:
                yield response

    async def DiffManifests(
        self, request: service_pb2.DiffManifestsRequest, context: grpc.aio.ServicerContext
    ) -> service_pb2.DiffManifestsResponse:
        return await manifests.diff(self.ctx, request.base, request.target)

    async def ListRenderedRounds(
        self, request: service_pb2.ListRenderedRoundsRequest, context: grpc.aio.ServicerContext
    ) -> service_pb2.ListRenderedRoundsResponse:
        return await rendered_rounds.list_rendered_rounds(self.ctx, request)

    async def ListRoundUsage(
        self, request: service_pb2.ListRoundUsageRequest, context: grpc.aio.ServicerContext
    ) -> service_pb2.ListRoundUsageResponse:
        return await round_usage.list_round_usage(self.ctx, request)

    async def ListThreadTimeline(
        self, request: service_pb2.ListThreadTimelineRequest, context: grpc.aio.ServicerContext
    ) -> service_pb2.ListThreadTimelineResponse:
        return await round_usage.list_timeline(self.ctx, request)
