"""Health reports SERVING once ready and NOT_SERVING while shutting down;
reflection lists every pioneer.v1 service."""

from __future__ import annotations

import asyncio

from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from pioneer_grpc.server.app import SERVICE_NAMES

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
    stub = reflection_pb2_grpc.ServerReflectionStub(server.channel())

    async def requests():
        yield reflection_pb2.ServerReflectionRequest(list_services="")

    names = set()
    async for response in stub.ServerReflectionInfo(requests()):
        names = {s.name for s in response.list_services_response.service}
    assert EXPECTED_SERVICES <= names
    assert "grpc.health.v1.Health" in names
    assert set(SERVICE_NAMES) == EXPECTED_SERVICES


async def test_reflection_resolves_a_contract_message(server):
    stub = reflection_pb2_grpc.ServerReflectionStub(server.channel())

    async def requests():
        yield reflection_pb2.ServerReflectionRequest(file_containing_symbol="pioneer.v1.PromptCompileInput")

    async for response in stub.ServerReflectionInfo(requests()):
        assert response.file_descriptor_response.file_descriptor_proto, response
