"""kill -9 under 50 writers loses no acknowledged entry; start-up refuses a taken address and TLS files
that do not match with one line and an exit code, before anything is written."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from pioneer_grpc.v1 import history_service_pb2, history_service_pb2_grpc
from tests.builders import own_turn
from tests.support import eventually, free_port

SCRIPT = Path(sys.executable).parent / "pioneer-grpc"
WRITERS = 50
MARKER = "MARKER-crash-content-41c2"


def _serve(home: Path, database_url: str, port: int, *extra: str) -> subprocess.Popen:
    command = [str(SCRIPT), "serve", "--home", str(home), "--listen", f"127.0.0.1:{port}", *extra]
    if database_url:
        command += ["--database-url", database_url]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


async def _wait_serving(address: str, proc: subprocess.Popen) -> None:
    async with grpc.aio.insecure_channel(address) as channel, asyncio.timeout(60):
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            try:
                if (await stub.Check(health_pb2.HealthCheckRequest(), timeout=1)).status == 1:
                    return
            except grpc.aio.AioRpcError:
                await asyncio.sleep(0.1)


async def _write_until_killed(address: str, acknowledged: list[str]) -> None:
    async with grpc.aio.insecure_channel(address) as channel:
        history = history_service_pb2_grpc.HistoryServiceStub(channel)

        async def writer(w: int) -> None:
            n = 0
            while True:
                entry_id = f"w{w}-{n}"
                n += 1
                try:
                    await history.AppendEntries(
                        history_service_pb2.AppendEntriesRequest(
                            thread_id="t", entries=[own_turn(entry_id, MARKER)]
                        ),
                        timeout=10,
                    )
                except grpc.aio.AioRpcError:
                    return
                acknowledged.append(entry_id)

        await asyncio.gather(*(writer(w) for w in range(WRITERS)))


async def test_kill_9_during_50_writers_loses_nothing_acknowledged(database_url, tmp_path):
    home = tmp_path / "home"
    url = "" if database_url.startswith("sqlite") else database_url
    port = free_port()
    proc = _serve(home, url, port)
    try:
        await _wait_serving(f"127.0.0.1:{port}", proc)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            await history_service_pb2_grpc.HistoryServiceStub(channel).CreateThread(
                history_service_pb2.CreateThreadRequest(thread_id="t")
            )
        acknowledged: list[str] = []
        writing = asyncio.create_task(_write_until_killed(f"127.0.0.1:{port}", acknowledged))
        await eventually(lambda: len(acknowledged) >= 200, 60, what="200 appends acknowledged")
        proc.send_signal(signal.SIGKILL)
        await asyncio.wait_for(writing, 60)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    assert MARKER not in stderr

    port = free_port()
    again = _serve(home, url, port)
    try:
        await _wait_serving(f"127.0.0.1:{port}", again)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            history = history_service_pb2_grpc.HistoryServiceStub(channel)
            for start in range(0, len(acknowledged), 100):
                batch = [own_turn(e, MARKER) for e in acknowledged[start : start + 100]]
                response = await history.AppendEntries(
                    history_service_pb2.AppendEntriesRequest(thread_id="t", entries=batch), timeout=30
                )
                assert response.created_count == 0, "an acknowledged entry was lost"
    finally:
        again.send_signal(signal.SIGTERM)
        again.wait(timeout=30)


def _one_line_failure(proc: subprocess.CompletedProcess, home: Path) -> str:
    assert proc.returncode == 1, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (home / "pioneer.db").exists()
    assert not (home / "SOUL.md").exists()
    return lines[0]


def test_address_in_use_fails_start_before_anything_is_written(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        home = tmp_path / "home"
        proc = subprocess.run(
            [str(SCRIPT), "serve", "--home", str(home), "--listen", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    line = _one_line_failure(proc, home)
    assert line == (
        f"pioneer-grpc serve: cannot start: cannot listen on 127.0.0.1:{port}: address already in use"
    )


def _self_signed(directory: Path, name: str) -> tuple[Path, Path]:
    from datetime import UTC, datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def test_tls_files_that_do_not_match_fail_start_before_anything_is_written(tmp_path):
    cert_a, key_a = _self_signed(tmp_path, "a")
    _, key_b = _self_signed(tmp_path, "b")
    cases = {
        "mismatch": ((cert_a, key_b), "does not belong to certificate"),
        "swapped": ((key_a, cert_a), "cannot be loaded as PEM"),
    }
    for name, ((cert, key), expected) in cases.items():
        home = tmp_path / f"home-{name}"
        proc = subprocess.run(
            [
                str(SCRIPT),
                "serve",
                "--home",
                str(home),
                "--listen",
                f"127.0.0.1:{free_port()}",
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
        assert expected in _one_line_failure(proc, home), name
