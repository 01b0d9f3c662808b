"""Health reports SERVING once ready and NOT_SERVING while shutting down;
reflection lists every pioneer.v1 service and serves the error-detail messages."""

from __future__ import annotations

import asyncio

from google.protobuf import descriptor_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2

from pioneer_grpc.server.app import SERVICE_NAMES

V1ALPHA = "grpc.reflection.v1alpha.ServerReflection"
EXPECTED_SERVICES = {
    "pioneer.v1.PromptCompilerService",
    "pioneer.v1.HistoryService",
    "pioneer.v1.ManifestService",
    "pioneer.v1.ProviderService",
    "pioneer.v1.TurnService",
    "pioneer.v1.EchoService",
}


async def test_health_is_serving_after_start(server):
    stub = health_pb2_grpc.HealthStub(server.channel())
    overall = await stub.Check(health_pb2.HealthCheckRequest())
    assert overall.status == health_pb2.HealthCheckResponse.SERVING
    for name in EXPECTED_SERVICES:
        per_service = await stub.Check(health_pb2.HealthCheckRequest(service=name))
        assert per_service.status == health_pb2.HealthCheckResponse.SERVING, name


async def test_health_turns_not_serving_during_shutdown(server):
    stub = health_pb2_grpc.HealthStub(server.channel())
    watch = stub.Watch(health_pb2.HealthCheckRequest())
    first = await watch.read()
    assert first.status == health_pb2.HealthCheckResponse.SERVING
    stopping = asyncio.create_task(server.running.stop(grace=1.0))
    second = await asyncio.wait_for(watch.read(), timeout=5)
    assert second.status == health_pb2.HealthCheckResponse.NOT_SERVING
    watch.cancel()
    await stopping


async def test_reflection_lists_every_pioneer_service(server):
    [response] = await _ask(
        server.channel(), V1ALPHA, reflection_pb2.ServerReflectionRequest(list_services="")
    )
    names = {s.name for s in response.list_services_response.service}
    assert EXPECTED_SERVICES <= names
    assert "grpc.health.v1.Health" in names
    assert set(SERVICE_NAMES) == EXPECTED_SERVICES


async def test_reflection_resolves_a_contract_message(server):
    request = reflection_pb2.ServerReflectionRequest(file_containing_symbol="pioneer.v1.PromptCompileInput")
    [response] = await _ask(server.channel(), V1ALPHA, request)
    names = [
        descriptor_pb2.FileDescriptorProto.FromString(raw).name
        for raw in response.file_descriptor_response.file_descriptor_proto
    ]
    assert names[0] == "pioneer/v1/prompt.proto", names


async def test_reflection_serves_the_error_detail_messages(server):
    """The types of google.rpc.Status details, so a reflection client (grpcurl) can decode them."""
    for symbol in ("google.rpc.ErrorInfo", "google.rpc.BadRequest", "google.rpc.BadRequest.FieldViolation"):
        request = reflection_pb2.ServerReflectionRequest(file_containing_symbol=symbol)
        [response] = await _ask(server.channel(), V1ALPHA, request)
        [first, *_] = [
            descriptor_pb2.FileDescriptorProto.FromString(raw)
            for raw in response.file_descriptor_response.file_descriptor_proto
        ]
        assert first.name == "google/rpc/error_details.proto", symbol
        assert {"ErrorInfo", "BadRequest"} <= {m.name for m in first.message_type}


async def _ask(channel, service: str, request: reflection_pb2.ServerReflectionRequest):
    call = channel.stream_stream(
        f"/{service}/ServerReflectionInfo",
        request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )

    async def requests():
        yield request

    return [response async for response in call(requests())]


async def test_reflection_v1_and_v1alpha_serve_the_contract_with_its_comments(server):
    for service in ("grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"):
        request = reflection_pb2.ServerReflectionRequest(file_containing_symbol="pioneer.v1.HistoryService")
        [response] = await _ask(server.channel(), service, request)
        files = {}
        for raw in response.file_descriptor_response.file_descriptor_proto:
            proto = descriptor_pb2.FileDescriptorProto.FromString(raw)
            files[proto.name] = proto
        assert {"pioneer/v1/history_service.proto", "google/api/field_behavior.proto"} <= set(files)
        comments = [
            loc.leading_comments
            for loc in files["pioneer/v1/history_service.proto"].source_code_info.location
        ]
        assert any("ALREADY_EXISTS THREAD_CONFLICT" in text for text in comments), service
        [listed] = await _ask(
            server.channel(), service, reflection_pb2.ServerReflectionRequest(list_services="")
        )
        names = {s.name for s in listed.list_services_response.service}
        assert {"grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"} <= names
        [missing] = await _ask(
            server.channel(),
            service,
            reflection_pb2.ServerReflectionRequest(file_containing_symbol="no.Such"),
        )
        assert missing.error_response.error_code == 5  # NOT_FOUND
        # grpcurl describe asks for methods and fields by name: found through their parent.
        for symbol in ("pioneer.v1.HistoryService.CreateThread", "pioneer.v1.Thread.thread_id"):
            [found] = await _ask(
                server.channel(),
                service,
                reflection_pb2.ServerReflectionRequest(file_containing_symbol=symbol),
            )
            assert found.file_descriptor_response.file_descriptor_proto, symbol
