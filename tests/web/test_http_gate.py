"""Before anything else on the HTTP listener: the Host must be one it answers for, and headers UTF-8.
Sent on raw sockets, byte for byte."""

from __future__ import annotations

import logging

import grpc
import pytest

from pioneer_grpc.v1 import history_service_pb2, history_service_pb2_grpc
from tests.web.raw_http import exchange, request_bytes

TOKEN = "tok-gate-7f3a"
CREATE = "/pioneer.v1.HistoryService/CreateThread"
AUTH = (b"authorization", f"Bearer {TOKEN}".encode())


def _port(handle) -> int:
    return handle.running.http.port


def _access(caplog: pytest.LogCaptureFixture, reason: str) -> list[logging.LogRecord]:
    return [
        r for r in caplog.records if r.name == "pioneer_grpc.access" and f"reason={reason}" in r.getMessage()
    ]


def _no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    bad = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not bad, [r.getMessage() for r in bad]


async def _thread_exists(handle, thread_id: str) -> bool:
    stub = history_service_pb2_grpc.HistoryServiceStub(handle.channel())
    try:
        await stub.GetThread(
            history_service_pb2.GetThreadRequest(thread_id=thread_id), metadata=handle.metadata(), timeout=10
        )
    except grpc.aio.AioRpcError as error:
        assert error.code() == grpc.StatusCode.NOT_FOUND
        return False
    return True


@pytest.mark.parametrize("token", [TOKEN, ""])
async def test_a_foreign_host_is_refused_before_routing(server_factory, caplog, token):
    """DNS rebinding: a page on another name that resolves here sends that name. With a token or
    without, it reaches neither a method nor the console."""
    caplog.set_level(logging.INFO)
    handle = await server_factory(http_listen="127.0.0.1:0", token=token)
    port = _port(handle)
    auth = [AUTH] if token else []
    foreign = [
        b"evil.example:%d" % port,
        b"evil.example",
        b"127.0.0.1.evil.example",
        b"localhost.evil.example",
    ]
    for host in foreign:
        answer = await exchange(
            port, request_bytes(CREATE, b'{"threadId":"rebound"}', host=host, headers=auth)
        )
        assert answer.status == 421, (host, answer)
        assert answer.json()["code"] == "permission_denied"
        console = await exchange(port, request_bytes("/", host=host, method=b"GET"))
        assert console.status == 421
    assert not await _thread_exists(handle, "rebound")
    # One access line per refusal, naming the reason.
    assert len(_access(caplog, "HOST_NOT_ALLOWED")) == 2 * len(foreign)
    # A request without a Host (HTTP/1.0) is refused too.
    bare = b"GET / HTTP/1.0\r\n\r\n"
    assert (await exchange(port, bare)).status == 421
    # The listen address and the localhost names are answered.
    for host in (b"127.0.0.1:%d" % port, b"localhost:%d" % port, b"LOCALHOST", b"[::1]:%d" % port):
        console = await exchange(port, request_bytes("/", host=host, method=b"GET"))
        assert console.status == 200, host
    created = await exchange(port, request_bytes(CREATE, b'{"threadId":"mine"}', headers=auth))
    assert created.status == 200, created
    _no_traceback(caplog)


async def test_the_allowed_hosts_are_configurable(server_factory):
    handle = await server_factory(
        http_listen="127.0.0.1:0", http_allowed_hosts=("pioneer.example.com", "*.corp.example")
    )
    port = _port(handle)
    for host, status in [
        (b"pioneer.example.com", 200),
        (b"pioneer.example.com:443", 200),
        (b"Pioneer.Example.COM.", 200),
        (b"a.corp.example", 200),
        (b"b.a.corp.example:8080", 200),
        (b"corp.example", 421),
        (b"xcorp.example", 421),
        # The configured list replaces the default one.
        (b"127.0.0.1", 421),
        (b"localhost", 421),
    ]:
        answer = await exchange(port, request_bytes("/", host=host, method=b"GET"))
        assert answer.status == status, host
    anyone = await server_factory(http_listen="127.0.0.1:0", http_allowed_hosts=("*",))
    answer = await exchange(_port(anyone), request_bytes("/", host=b"whatever.example", method=b"GET"))
    assert answer.status == 200


@pytest.mark.parametrize("header", [b"x-custom", b"authorization", b"content-type", b"x-request-id"])
async def test_a_header_that_is_not_utf8_is_400_with_one_access_line(server_factory, caplog, header):
    caplog.set_level(logging.INFO)
    handle = await server_factory(http_listen="127.0.0.1:0", token=TOKEN)
    port = _port(handle)
    value = b"Bearer " + TOKEN.encode() + b"\xff\xfe" if header == b"authorization" else b"\xc3\x28"
    headers = [(header, value)] + ([] if header == b"authorization" else [AUTH])
    for path, method in [(CREATE, b"POST"), ("/", b"GET"), ("/no/such/path", b"GET")]:
        body = b'{"threadId":"bytes"}' if method == b"POST" else b""
        answer = await exchange(port, request_bytes(path, body, headers=headers, method=method))
        assert answer.status == 400, (path, answer)
        assert answer.json()["code"] == "invalid_argument"
    assert not await _thread_exists(handle, "bytes")
    assert len(_access(caplog, "NON_UTF8_HEADER")) == 3
    _no_traceback(caplog)
    assert "\\xff" not in caplog.text and "\\xc3" not in caplog.text
