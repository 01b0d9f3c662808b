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

_FIELDS = turn_service_pb2.PrepareTurnResponse.DESCRIPTOR.fields_by_name
CHAT_REQUEST_FIELD = _FIELDS["chat_request"].number
BODY_FIELD = _FIELDS["provider_body_json"].number
REPORT_FIELD = _FIELDS["history_report"].number
MANIFEST_FIELD = _FIELDS["manifest"].number


class TurnServicer(turn_service_pb2_grpc.TurnServiceServicer):
    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx

    async def PrepareTurn(
        self, request: turn_service_pb2.PrepareTurnRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        prepared = await prepare_turn(self.ctx, request)
        response = turn_service_pb2.PrepareTurnResponse(manifest_event_id=prepared.manifest_event_id)
        # Encoded where they are rather than copied into the response first.
        tail = [
            wire.field_record(REPORT_FIELD, prepared.history_report.SerializeToString()),
            wire.field_record(MANIFEST_FIELD, prepared.manifest.SerializeToString()),
        ]
        if prepared.rendered is not None:
            response.provider_path = prepared.rendered.path
            response.provider_notices.extend(
                provider_service_pb2.RenderNotice(code=n.code, message=n.message, field=n.field)
                for n in prepared.rendered.notices
            )
            body = prepared.rendered.body
            tail += [wire.field_header(BODY_FIELD, len(body)), body]
        if not request.provider_body_only:
            chat = prepared.chat_request_parts()
            tail += [wire.field_header(CHAT_REQUEST_FIELD, sum(map(len, chat))), *chat]
        # Joined once: the body and the history are hundreds of kilobytes each.
        return b"".join([response.SerializeToString(), *tail])
