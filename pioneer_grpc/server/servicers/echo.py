"""EchoService: the benchmark baseline; does nothing but answer."""

from __future__ import annotations

import grpc

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.v1 import echo_service_pb2, echo_service_pb2_grpc

MAX_RESPONSE_BYTES = 16 * 1024 * 1024


class EchoServicer(echo_service_pb2_grpc.EchoServiceServicer):
    async def Echo(
        self, request: echo_service_pb2.EchoRequest, context: grpc.aio.ServicerContext
    ) -> echo_service_pb2.EchoResponse:
        if not request.HasField("response_bytes"):
            return echo_service_pb2.EchoResponse(payload=request.payload)
        size = request.response_bytes
        if not 0 <= size <= MAX_RESPONSE_BYTES:
            raise InvalidArgument.field("response_bytes", f"must be 0 to {MAX_RESPONSE_BYTES}")
        return echo_service_pb2.EchoResponse(payload=bytes(size))
