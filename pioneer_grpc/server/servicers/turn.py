"""TurnService: prepare a whole provider round in one call (service/turn.py)."""

from __future__ import annotations

import grpc

from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.turn import prepare_turn
from pioneer_grpc.v1 import provider_service_pb2, turn_service_pb2, turn_service_pb2_grpc


class TurnServicer(turn_service_pb2_grpc.TurnServiceServicer):
    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx

    async def PrepareTurn(
        self, request: turn_service_pb2.PrepareTurnRequest, context: grpc.aio.ServicerContext
    ) -> turn_service_pb2.PrepareTurnResponse:
        prepared = await prepare_turn(self.ctx, request)
        response = turn_service_pb2.PrepareTurnResponse(
            chat_request=prepared.chat_request,
            history_report=prepared.history_report,
            manifest=prepared.chat_request.compiled_prompt.manifest,
            manifest_event_id=prepared.manifest_event_id,
        )
        if prepared.rendered is not None:
            response.provider_body_json = prepared.rendered.body_json
            response.provider_path = prepared.rendered.path
            response.provider_notices.extend(
                provider_service_pb2.RenderNotice(code=n.code, message=n.message, field=n.field)
                for n in prepared.rendered.notices
            )
        return response
