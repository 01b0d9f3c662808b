"""Bearer token on every RPC but health; TLS with a certificate made at test time."""

from __future__ import annotations

import datetime

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from grpc_health.v1 import health_pb2, health_pb2_grpc

from pioneer_grpc.v1 import echo_service_pb2, echo_service_pb2_grpc

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


def _self_signed(tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (tmp_path / "cert.pem").write_bytes(cert_pem)
    (tmp_path / "key.pem").write_bytes(key_pem)
    return tmp_path / "cert.pem", tmp_path / "key.pem", cert_pem


async def test_tls_serves_a_tls_client(server_factory, tmp_path):
    cert, key, cert_pem = _self_signed(tmp_path)
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
    cert, key, _ = _self_signed(tmp_path)
    server = await server_factory(tls_cert=cert, tls_key=key)
    stub = echo_service_pb2_grpc.EchoServiceStub(server.channel())
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.Echo(PING, timeout=5)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
