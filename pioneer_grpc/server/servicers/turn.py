"""TurnService: prepare a whole provider round in one call (service/turn.py).

The answer is written as bytes (see pioneer_grpc/wire.py): the response's small
fields encoded here, then the ChatRequest the round joined from encoded parts.
"""

from __future__ import annotations

import grpc

from pioneer_grpc import wire
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.turn import prepare_turn
from pioneer_grpc.v1 import provider_service_pb2, turn_service_pb2, turn_service_pb2_grpc
from pioneer_grpc.wire import field_record

CHAT_REQUEST_FIELD = turn_service_pb2.PrepareTurnResponse.DESCRIPTOR.fields_by_name["chat_request"].number
BODY_FIELD = turn_service_pb2.PrepareTurnResponse.DESCRIPTOR.fields_by_name["provider_body_json"].number


class TurnServicer(turn_service_pb2_grpc.TurnServiceServicer):
    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx

    async def PrepareTurn(
        self, request: turn_service_pb2.PrepareTurnRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        prepared = await prepare_turn(self.ctx, request)
        response = turn_service_pb2.PrepareTurnResponse(
            history_report=prepared.history_report,
            manifest=prepared.manifest,
            manifest_event_id=prepared.manifest_event_id,
        )
        encoded_body = b""
        if prepared.rendered is not None:
            response.provider_path = prepared.rendered.path
            response.provider_notices.extend(
                provider_service_pb2.RenderNotice(code=n.code, message=n.message, field=n.field)
                for n in prepared.rendered.notices
            )
            encoded_body = wire.field_record(BODY_FIELD, prepared.rendered.body)
        encoded = response.SerializeToString() + encoded_body
        if request.provider_body_only:
            return encoded
        return encoded + field_record(CHAT_REQUEST_FIELD, prepared.encoded_chat_request())
