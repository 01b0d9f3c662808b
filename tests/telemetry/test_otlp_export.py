"""--otlp-endpoint: spans reach a real OTLP/gRPC collector on loopback."""

from __future__ import annotations

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from pioneer_grpc.client import AsyncClient
from pioneer_grpc.config import Config
from pioneer_grpc.server.app import start_server
from tests.telemetry.rounds import Rounds


class Collector(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self) -> None:
        self.requests: list[trace_service_pb2.ExportTraceServiceRequest] = []

    async def Export(self, request, context):
        self.requests.append(request)
        return trace_service_pb2.ExportTraceServiceResponse()


async def test_spans_are_exported_to_the_configured_endpoint(tmp_path):
    collector = Collector()
    sink = grpc.aio.server()
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(collector, sink)
    port = sink.add_insecure_port("127.0.0.1:0")
    await sink.start()
    try:
        config = Config(listen="127.0.0.1:0", home=tmp_path, otlp_endpoint=f"http://127.0.0.1:{port}")
        server = await start_server(config)
        try:
            assert server.ctx.telemetry.tracing
            async with await AsyncClient.connect(server.address) as client:
                await Rounds(client).thread("t-otlp")
        finally:
            await server.stop(grace=0.5)  # stopping flushes the batch
    finally:
        await sink.stop(0)
    [resource_spans] = [r for request in collector.requests for r in request.resource_spans]
    resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
    assert resource["service.name"] == "pioneer-grpc"
    names = [span.name for scope in resource_spans.scope_spans for span in scope.spans]
    assert names == ["pioneer.v1.HistoryService/CreateThread"]
