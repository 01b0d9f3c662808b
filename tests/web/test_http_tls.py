"""--tls-cert covers --http-listen: the HTTP listener speaks HTTPS only, from the same certificate.

Plain HTTP to it gets no HTTP answer (the TLS handshake fails and the connection
is closed, before any byte reaches a method); HTTPS is served. curl and the
TypeScript client over HTTPS: tests/web/test_http_clients.py.
"""

from __future__ import annotations

import asyncio
import shutil
import ssl

import grpc
import pytest

from pioneer_grpc.v1 import history_service_pb2, history_service_pb2_grpc
from tests.support import unavailable_here
from tests.tls import self_signed
from tests.web.raw_http import closed_by_server, exchange, request_bytes

TOKEN = "tok-tls-41be"
CREATE = "/pioneer.v1.HistoryService/CreateThread"
AUTH = (b"authorization", f"Bearer {TOKEN}".encode())
WITHIN = 15.0


@pytest.fixture
async def tls_edge(server_factory, tmp_path):
    cert, key, cert_pem = self_signed(tmp_path)
    handle = await server_factory(http_listen="127.0.0.1:0", token=TOKEN, tls_cert=cert, tls_key=key)
    trust = ssl.create_default_context(cadata=cert_pem.decode())
    return handle, trust, cert, cert_pem


async def test_plain_http_is_refused_and_https_is_served(tls_edge):
    handle, trust, _cert, cert_pem = tls_edge
    port = handle.running.http.port
    assert handle.running.http.url.startswith("https://")
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request_bytes(CREATE, b'{"threadId":"plain"}', headers=[AUTH]))
    got = b""
    async with asyncio.timeout(WITHIN):
        try:
            while chunk := await reader.read(65536):
                got += chunk
        except ConnectionError:
            pass
    writer.close()
    # No HTTP answer at all: at most a TLS alert, then the connection is closed.
    assert not got.startswith(b"HTTP/"), got[:100]
    answer = await exchange(
        port, request_bytes(CREATE, b'{"threadId":"secure"}', headers=[AUTH]), tls=trust, host="localhost"
    )
    assert answer.status == 200, answer
    grpc_port = handle.running.port
    credentials = grpc.ssl_channel_credentials(root_certificates=cert_pem)
    async with grpc.aio.secure_channel(f"localhost:{grpc_port}", credentials) as channel:
        await _exists_only_secure(channel, handle.metadata())


async def _exists_only_secure(channel: grpc.aio.Channel, metadata) -> None:
    stub = history_service_pb2_grpc.HistoryServiceStub(channel)
    for thread_id, exists in (("plain", False), ("secure", True)):
        try:
            await stub.GetThread(
                history_service_pb2.GetThreadRequest(thread_id=thread_id),
                metadata=metadata,
                timeout=10,
            )
            assert exists
        except grpc.aio.AioRpcError as error:
            assert not exists and error.code() == grpc.StatusCode.NOT_FOUND


async def test_a_connection_that_never_starts_its_handshake_is_closed(server_factory, tmp_path):
    cert, key, _ = self_signed(tmp_path)
    handle = await server_factory(
        http_listen="127.0.0.1:0", tls_cert=cert, tls_key=key, http_header_timeout_seconds=1
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", handle.running.http.port)
    assert await closed_by_server(reader, WITHIN)
    writer.close()
    assert handle.running.http.open_connections == 0


async def test_curl_over_https_and_refused_over_http(tls_edge):
    curl = shutil.which("curl")
    if curl is None:
        unavailable_here("curl is missing: apt-get install -y curl")
    handle, _trust, cert, _ = tls_edge
    port = handle.running.http.port
    common = [
        "-sS",
        "--max-time",
        "20",
        "-H",
        "content-type: application/json",
        "-H",
        f"authorization: Bearer {TOKEN}",
    ]

    async def run(*args: str) -> tuple[int, bytes, bytes]:
        process = await asyncio.create_subprocess_exec(
            curl, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await process.communicate()
        return process.returncode or 0, out, err

    code, out, err = await run(
        *common, "--cacert", str(cert), "-d", '{"threadId":"curl"}', f"https://localhost:{port}{CREATE}"
    )
    assert code == 0, err
    assert b'"threadId":"curl"' in out
    code, out, _ = await run(*common, "-d", '{"threadId":"curl-plain"}', f"http://localhost:{port}{CREATE}")
    assert code != 0
    assert out == b""
