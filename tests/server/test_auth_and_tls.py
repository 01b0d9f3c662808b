"""Bearer token on every RPC but health; TLS with a certificate made at test time."""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from pioneer_grpc.v1 import echo_service_pb2, echo_service_pb2_grpc
from tests.tls import self_signed

PING = echo_service_pb2.EchoRequest(payload=b"ping")


async def test_token_accepted(server_factory):
    server = await server_factory(token="s3cret")
    stub = echo_service_pb2_grpc.EchoServiceStub(server.channel())
    reply = await stub.Echo(PING, metadata=(("authorization", "Bearer s3cret"),))
    assert reply.payload == b"ping"


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ((), "missing bearer token"),
        ((("authorization", "Bearer wrong"),), "invalid bearer token"),
        ((("authorization", "s3cret"),), "invalid bearer token"),
    ],
)
async def test_token_missing_or_wrong_is_unauthenticated(server_factory, metadata, message):
    server = await server_factory(token="s3cret")
    stub = echo_service_pb2_grpc.EchoServiceStub(server.channel())
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.Echo(PING, metadata=metadata)
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert message in (err.value.details() or "")


async def test_health_needs_no_token(server_factory):
    server = await server_factory(token="s3cret")
    stub = health_pb2_grpc.HealthStub(server.channel())
    reply = await stub.Check(health_pb2.HealthCheckRequest())
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_no_token_configured_means_open(server):
    stub = echo_service_pb2_grpc.EchoServiceStub(server.channel())
    assert (await stub.Echo(PING)).payload == b"ping"


async def test_tls_serves_a_tls_client(server_factory, tmp_path):
    cert, key, cert_pem = self_signed(tmp_path)
    server = await server_factory(tls_cert=cert, tls_key=key)
    port = server.address.rpartition(":")[2]
    channel = grpc.aio.secure_channel(
        f"localhost:{port}", grpc.ssl_channel_credentials(root_certificates=cert_pem)
    )
    try:
        reply = await echo_service_pb2_grpc.EchoServiceStub(channel).Echo(PING, timeout=10)
        assert reply.payload == b"ping"
    finally:
        await channel.close()


async def test_tls_refuses_a_plaintext_client(server_factory, tmp_path):
    cert, key, _ = self_signed(tmp_path)
    server = await server_factory(tls_cert=cert, tls_key=key)
    stub = echo_service_pb2_grpc.EchoServiceStub(server.channel())
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.Echo(PING, timeout=5)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
