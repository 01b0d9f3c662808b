"""The smaller edges: a collector that never answers, provider counts after the answer, certificates out of
their validity, Echo's documented maximum, a NUL in CountTokens.model, a PostgreSQL that stops answering."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from pioneer_grpc.adapters.count_tokens import MAX_CONCURRENT
from pioneer_grpc.client import RpcFailure
from pioneer_grpc.store import work
from pioneer_grpc.telemetry import Telemetry
from pioneer_grpc.v1 import echo_service_pb2, history_pb2, history_service_pb2
from tests.chaos.conftest import free_port
from tests.chaos.test_crash_and_startup import SCRIPT, _one_line_failure
from tests.support import eventually, failure

MiB = 1024 * 1024


class _Stuck(SpanExporter):
    """A collector that never answers: export blocks until the test lets it go."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def export(self, spans):
        self.release.wait()
        return SpanExportResult.FAILURE


async def test_a_stop_does_not_wait_for_a_collector_that_never_answers(caplog):
    exporter = _Stuck()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    telemetry = Telemetry(provider)
    # The queued span is exported at shutdown, into the stuck collector.
    telemetry.tracer.start_span("s").end()
    caplog.set_level(logging.WARNING)
    try:
        async with asyncio.timeout(30):
            await telemetry.close(flush_seconds=0.2)
        assert any("spans not exported" in r.getMessage() for r in caplog.records)
    finally:
        exporter.release.set()


async def test_count_tokens_cancels_its_other_provider_requests_once_it_answers(server_factory, monkeypatch):
    received: list[int] = []
    closed: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        )
        await reader.readexactly(length)
        received.append(len(received))
        if len(received) == 1:
            writer.write(b"HTTP/1.1 500 X\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
            await writer.drain()
            writer.close()
            return
        await reader.read()  # hangs until the client lets go of the request
        closed.append(1)
        writer.close()

    fake = await asyncio.start_server(handle, "127.0.0.1", 0)
    monkeypatch.setenv("PIONEER_TEST_COUNT_KEY", "k")
    server = await server_factory(
        count_tokens_anthropic_base_url=f"http://127.0.0.1:{fake.sockets[0].getsockname()[1]}",
        count_tokens_anthropic_api_key_env="PIONEER_TEST_COUNT_KEY",
        count_tokens_timeout_seconds=60,
    )
    try:
        client = await server.client()
        texts = [f"text number {i}" for i in range(40)]
        answer = await client.count_tokens(texts=texts, model="claude-3-haiku", timeout=30)
        assert not answer.exact
        assert "HTTP 500" in answer.fallback_reason
        await eventually(lambda: len(closed) == len(received) - 1, what="every request under way let go")
        # Only the requests already under way were sent, and every one of them was let go.
        assert len(received) <= MAX_CONCURRENT
    finally:
        fake.close()


def _certificate(directory: Path, not_before: datetime, not_after: datetime) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "c.crt", directory / "c.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


@pytest.mark.parametrize(
    ("days_before", "days_after", "expected"),
    [(-30, -1, "expired on"), (2, 30, "is not valid before")],
)
def test_a_certificate_outside_its_validity_stops_the_start(tmp_path, days_before, days_after, expected):
    now = datetime.now(UTC)
    cert, key = _certificate(tmp_path, now + timedelta(days=days_before), now + timedelta(days=days_after))
    home = tmp_path / "home"
    listen = f"127.0.0.1:{free_port()}"
    proc = subprocess.run(
        [
            str(SCRIPT),
            "serve",
            "--home",
            str(home),
            "--listen",
            listen,
            "--tls-cert",
            str(cert),
            "--tls-key",
            str(key),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
    )
    line = _one_line_failure(proc, home)
    assert f"TLS certificate {cert} {expected}" in line


async def test_echo_carries_its_documented_16_mib_both_ways(server):
    # The wire itself: a channel opened for 17 MiB messages, past the client's 16 MiB default.
    options = [("grpc.max_receive_message_length", 17 * MiB), ("grpc.max_send_message_length", 17 * MiB)]
    async with grpc.aio.insecure_channel(server.address, options=options) as channel:
        echo = channel.unary_unary(
            "/pioneer.v1.EchoService/Echo",
            request_serializer=echo_service_pb2.EchoRequest.SerializeToString,
            response_deserializer=echo_service_pb2.EchoResponse.FromString,
        )
        answer = await echo(echo_service_pb2.EchoRequest(response_bytes=16 * MiB), timeout=60)
        assert len(answer.payload) == 16 * MiB
        answer = await echo(echo_service_pb2.EchoRequest(payload=b"\x01" * (16 * MiB)), timeout=60)
        assert len(answer.payload) == 16 * MiB


async def test_a_nul_in_count_tokens_model_is_invalid_argument(server):
    client = await server.client()
    failed = await failure(client.count_tokens(texts=["a"], model="gpt-4o\x00x"))
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [field for field, _ in failed.violations] == ["model"]


def _postgres_pids(directory: Path) -> list[int]:
    postmaster = int((directory / "data" / "postmaster.pid").read_text().split()[0])
    children = Path(f"/proc/{postmaster}/task/{postmaster}/children").read_text().split()
    return [postmaster, *map(int, children)]


async def test_a_frozen_postgres_cannot_hold_a_call_past_its_bound(pg_cluster, server_factory, monkeypatch):
    monkeypatch.setattr(work, "UNIT_SECONDS", 2.0)
    server = await server_factory(database_url=pg_cluster.url, health_probe_seconds=0)
    client = await server.client()
    await client.create_thread(thread_id="t", config=history_pb2.ThreadConfig(model="gpt-4o"))
    entry = history_pb2.ConversationEntry(
        entry_id="e1", turn_id="u1", role=history_pb2.ENTRY_ROLE_USER, content="hello"
    )
    request = history_service_pb2.AppendEntriesRequest(thread_id="t", entries=[entry])
    frozen = _postgres_pids(pg_cluster.directory)
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    try:
        failed = await failure(client.append_entries(request, timeout=25))
        assert failed.code == grpc.StatusCode.UNAVAILABLE
        assert failed.reason == "DATABASE_TIMEOUT"
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)

    # Thawed, the same append goes through (or was already stored by the unit that ran on).
    async def appended() -> bool:
        try:
            await client.append_entries(request, timeout=10)
        except RpcFailure as error:
            assert error.code == grpc.StatusCode.UNAVAILABLE
            return False
        return True

    await eventually(appended, 60, step=0.2, what="the append, once the database is thawed")
