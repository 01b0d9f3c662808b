"""The HTTP listener's connections on raw sockets: a cap at accept, and deadlines for a request's
headers and body and for an idle connection, so a client that stops half-way holds nothing for long."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from tests.support import eventually
from tests.web.raw_http import closed_by_server, read_answer, request_bytes

TOKEN = "tok-conn-2c9d"
ECHO = "/pioneer.v1.EchoService/Echo"
AUTH = (b"authorization", f"Bearer {TOKEN}".encode())
# Deadlines long enough that a test's own steps never meet them unless it waits for them.
LONG = 60.0
# How long a test waits for a deadline of 1 s to be acted on (a loaded machine answers late).
WITHIN = 15.0


async def _open(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


async def _metric(handle, sample: str) -> float:
    async with httpx.AsyncClient() as client:
        text = (await client.get(f"http://{handle.running.metrics_address}/metrics")).text
    for line in text.splitlines():
        if line.startswith(sample + " "):
            return float(line.split()[-1])
    return 0.0


def _no_error_lines(caplog: pytest.LogCaptureFixture) -> None:
    bad = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not bad, [r.getMessage() for r in bad]


async def test_beyond_the_cap_a_new_connection_is_closed_at_accept(server_factory):
    handle = await server_factory(
        http_listen="127.0.0.1:0",
        max_connections=3,
        metrics_listen="127.0.0.1:0",
        http_header_timeout_seconds=LONG,
    )
    port = handle.running.http.port
    held = [await _open(port) for _ in range(3)]
    await eventually(lambda: handle.running.http.open_connections == 3, what="3 connections counted")
    reader, writer = await _open(port)
    # Closed by the server at once, not after the header timeout.
    assert await closed_by_server(reader, WITHIN)
    writer.close()
    assert await _metric(handle, 'pioneer_http_connections_ended_total{reason="over_limit"}') >= 1
    assert await _metric(handle, "pioneer_http_connections") == 3
    # The held ones are still open; once one goes, a new connection is served.
    assert not any(r.at_eof() for r, _ in held)
    held[0][1].close()
    await eventually(lambda: handle.running.http.open_connections == 2, what="the closed one given back")
    reader, writer = await _open(port)
    writer.write(request_bytes("/", method=b"GET"))
    assert (await asyncio.wait_for(read_answer(reader), WITHIN)).status == 200
    writer.close()
    for _, w in held[1:]:
        w.close()


async def test_headers_must_be_in_within_the_header_timeout(server_factory, caplog):
    caplog.set_level(logging.INFO)
    handle = await server_factory(
        http_listen="127.0.0.1:0",
        http_header_timeout_seconds=1,
        http_idle_timeout_seconds=LONG,
        metrics_listen="127.0.0.1:0",
    )
    port = handle.running.http.port
    silent = await _open(port)
    half = await _open(port)
    half[1].write(b"POST " + ECHO.encode() + b" HTTP/1.1\r\nhost: 127.0.0.1\r\n")

    async def drip() -> None:
        # A byte at a time, as a slow-headers client keeps a connection: no byte restarts the deadline.
        while not half[1].is_closing():
            half[1].write(b"x")
            await asyncio.sleep(0.2)

    dripping = asyncio.create_task(drip())
    assert await closed_by_server(silent[0], WITHIN)
    assert await closed_by_server(half[0], WITHIN)
    dripping.cancel()
    # On a kept-alive connection the next request's first byte starts the deadline over.
    kept = await _open(port)
    kept[1].write(request_bytes("/", method=b"GET"))
    assert (await read_answer(kept[0])).status == 200
    kept[1].write(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n")
    assert await closed_by_server(kept[0], WITHIN)
    assert await _metric(handle, 'pioneer_http_connections_ended_total{reason="header_timeout"}') == 3
    await eventually(lambda: handle.running.http.open_connections == 0, what="every connection given back")
    _no_error_lines(caplog)


async def test_a_body_must_be_in_within_the_body_timeout(server_factory, caplog):
    caplog.set_level(logging.INFO)
    handle = await server_factory(
        http_listen="127.0.0.1:0",
        token=TOKEN,
        http_header_timeout_seconds=LONG,
        http_body_timeout_seconds=1,
        metrics_listen="127.0.0.1:0",
    )
    reader, writer = await _open(handle.running.http.port)
    whole = request_bytes(ECHO, b'{"payload": "' + b"a" * 90 + b'"}', headers=[AUTH])
    writer.write(whole[:-60])  # the headers, and part of the body
    assert await closed_by_server(reader, WITHIN)
    assert await _metric(handle, 'pioneer_http_connections_ended_total{reason="body_timeout"}') == 1
    await eventually(lambda: handle.running.http.open_connections == 0, what="the connection given back")
    # The same request sent whole is answered.
    reader, writer = await _open(handle.running.http.port)
    writer.write(whole)
    assert (await asyncio.wait_for(read_answer(reader), WITHIN)).status == 200
    writer.close()
    _no_error_lines(caplog)


async def test_a_request_answered_before_its_body_ends_its_connection(server_factory):
    """A refused token is answered at once; the body it came with is not waited for."""
    handle = await server_factory(
        http_listen="127.0.0.1:0", token=TOKEN, http_body_timeout_seconds=LONG, metrics_listen="127.0.0.1:0"
    )
    reader, writer = await _open(handle.running.http.port)
    writer.write(request_bytes(ECHO, b'{"payload": "' + b"a" * 1000 + b'"}')[:-500])
    assert (await asyncio.wait_for(read_answer(reader), WITHIN)).status == 401
    assert await closed_by_server(reader, WITHIN)
    assert await _metric(handle, 'pioneer_http_connections_ended_total{reason="body_unread"}') == 1


async def test_an_idle_connection_is_closed_after_the_idle_timeout(server_factory):
    handle = await server_factory(
        http_listen="127.0.0.1:0", http_header_timeout_seconds=LONG, http_idle_timeout_seconds=1
    )
    reader, writer = await _open(handle.running.http.port)
    writer.write(request_bytes("/", method=b"GET"))
    assert (await read_answer(reader)).status == 200
    assert await closed_by_server(reader, WITHIN)
    await eventually(lambda: handle.running.http.open_connections == 0, what="the connection given back")
