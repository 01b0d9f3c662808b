"""EchoService: the benchmark baseline; does nothing but answer."""

from __future__ import annotations

import grpc

from pioneer_grpc.v1 import echo_service_pb2, echo_service_pb2_grpc


class EchoServicer(echo_service_pb2_grpc.EchoServiceServicer):
    async def Echo(
        self, request: echo_service_pb2.EchoRequest, context: grpc.aio.ServicerContext
    ) -> echo_service_pb2.EchoResponse:
        return echo_service_pb2.EchoResponse(payload=request.payload)
