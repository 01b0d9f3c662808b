"""TurnService: prepare a whole provider round in one call."""

from __future__ import annotations

import grpc

from pioneer_grpc.server.context import ServerContext
from pioneer_grpc.server.turn_ops import prepare_turn
from pioneer_grpc.v1 import turn_service_pb2, turn_service_pb2_grpc


class TurnServicer(turn_service_pb2_grpc.TurnServiceServicer):
    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx

    async def PrepareTurn(
        self, request: turn_service_pb2.PrepareTurnRequest, context: grpc.aio.ServicerContext
    ) -> turn_service_pb2.PrepareTurnResponse:
        return await prepare_turn(self.ctx, request)
