"""A client that goes away (a closed browser tab) costs one DEBUG line: its call's access line.

The console watches its thread's manifest events; closing the tab drops that
stream. When the drop comes while the server is writing the stream's backlog,
the writes that follow it in the same turn of the event loop used to reach the
closed socket, and asyncio logged a WARNING for each ("socket.send() raised
exception.", hundreds in one second). Here a client on a raw socket reads the
first bytes of a long backlog, then resets the connection, over HTTP and HTTPS
(where the same writes reach the TLS layer's closed socket); the server must
write one DEBUG line for the call and nothing at INFO or above.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import ssl
import struct
import threading

import grpc
import pytest

from pioneer_grpc.client import AsyncClient, ConnectOptions
from pioneer_grpc.v1 import history_pb2
from tests.support import eventually
from tests.tls import self_signed
from tests.web.raw_http import request_bytes
from tests.web.rounds import prepare_request

WATCH = "/pioneer.v1.ManifestService/WatchManifests"
THREAD = "gone-thread"
# Enough events that the backlog takes the server many writes in one turn of its loop.
EVENTS = 300
WITHIN = 30.0


async def _seed_events(client: AsyncClient, count: int) -> None:
    """`count` manifest events on THREAD: each turn compiles another date, so each records one."""
    await client.create_thread(thread_id=THREAD, config=history_pb2.ThreadConfig(model="claude-sonnet-4-5"))
    for number in range(count):
        request = prepare_request(THREAD, f"turn-{number}", "hello", extra_system=f"Date: {number}")
        await client.prepare_turn(request)


def _envelope(message: dict[str, object]) -> bytes:
    data = json.dumps(message).encode()
    return struct.pack(">BI", 0, len(data)) + data


def _read_then_reset(port: int, started: threading.Event, tls: ssl.SSLContext | None) -> None:
    """Asks for the thread's backlog, reads its first bytes, then resets the connection (RST)."""
    with socket.create_connection(("127.0.0.1", port), timeout=WITHIN) as plain:
        sock = plain if tls is None else tls.wrap_socket(plain, server_hostname="localhost")
        sock.sendall(
            request_bytes(
                WATCH,
                _envelope({"threadId": THREAD}),
                content_type=b"application/connect+json",
            )
        )
        sock.recv(1)
        started.set()
        # Unread bytes plus a zero linger: the kernel answers with a reset, as a closed tab may.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@pytest.mark.parametrize("scheme", ["http", "https"])
async def test_a_client_reset_mid_backlog_is_one_debug_line(server_factory, caplog, tmp_path, scheme):
    caplog.set_level(logging.DEBUG)
    if scheme == "https":
        cert, key, cert_pem = self_signed(tmp_path)
        handle = await server_factory(http_listen="127.0.0.1:0", tls_cert=cert, tls_key=key)
        tls: ssl.SSLContext | None = ssl.create_default_context(cadata=cert_pem.decode())
        # The certificate names localhost; the server listens on 127.0.0.1.
        channel = grpc.aio.secure_channel(
            f"localhost:{handle.running.port}", grpc.ssl_channel_credentials(root_certificates=cert_pem)
        )
    else:
        handle = await server_factory(http_listen="127.0.0.1:0")
        tls = None
        channel = handle.channel()
    try:
        await _seed_events(AsyncClient(channel, ConnectOptions()), EVENTS)
    finally:
        await channel.close()
    for name in ("aiosqlite", "sqlalchemy"):
        logging.getLogger(name).setLevel(logging.WARNING)
    since = len(caplog.records)

    started = threading.Event()
    await asyncio.to_thread(_read_then_reset, handle.running.http.port, started, tls)
    assert started.is_set()

    def ended() -> bool:
        return any(WATCH in r.getMessage() for r in caplog.records[since:])

    await eventually(ended, what="the watch's access line", within=WITHIN)
    await eventually(lambda: handle.running.http.open_connections == 0, what="the connection closed")
    lines = caplog.records[since:]
    loud = [f"{r.levelname} {r.name}: {r.getMessage()}" for r in lines if r.levelno >= logging.INFO]
    assert loud == []
    watch_lines = [r for r in lines if WATCH in r.getMessage()]
    assert len(watch_lines) == 1
    assert watch_lines[0].levelno == logging.DEBUG
    assert "code=CANCELLED" in watch_lines[0].getMessage()
