"""One credential and a JSON object: what the HTTP listener asks of a request, as gRPC does. Sent on raw
sockets, byte for byte."""

from __future__ import annotations

import asyncio

import grpc
import httpx
import pytest

from pioneer_grpc.v1 import history_service_pb2, history_service_pb2_grpc
from tests.web import connect_http as http
from tests.web.raw_http import exchange, request_bytes

TOKEN = "tok-requests-7f3a"
CREATE = "/pioneer.v1.HistoryService/CreateThread"
ECHO = "/pioneer.v1.EchoService/Echo"
AUTH = (b"authorization", f"Bearer {TOKEN}".encode())


def _port(handle) -> int:
    return handle.running.http.port


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


@pytest.mark.parametrize("valid_first", [True, False])
async def test_two_authorization_headers_are_refused_as_on_grpc(server_factory, valid_first):
    handle = await server_factory(http_listen="127.0.0.1:0", token=TOKEN)
    pair = [AUTH, (b"authorization", b"Bearer wrong")]
    headers = pair if valid_first else pair[::-1]
    answer = await exchange(_port(handle), request_bytes(CREATE, b'{"threadId":"twice"}', headers=headers))
    assert answer.status == 401
    assert answer.json()["code"] == "unauthenticated"
    assert "more than one authorization header" in answer.json()["message"]
    assert not await _thread_exists(handle, "twice")
    # The same header twice, both valid, is refused too: exactly one is accepted.
    both = await exchange(_port(handle), request_bytes(CREATE, b'{"threadId":"twice"}', headers=[AUTH, AUTH]))
    assert both.status == 401


@pytest.mark.parametrize("body", [b"[]", b'"x"', b"1", b"null", b"true", b' \n [{"threadId": "t"}]'])
async def test_a_json_request_that_is_not_an_object_is_refused(server_factory, body):
    handle = await server_factory(http_listen="127.0.0.1:0", token=TOKEN)
    answer = await exchange(_port(handle), request_bytes(CREATE, body, headers=[AUTH]))
    assert answer.status == 400, answer
    error = answer.json()
    assert error["code"] == "invalid_argument"
    assert http.reasons(error) == ["MALFORMED_REQUEST"]
    # An object is read as before (an empty one: the thread id it lacks is named).
    empty = await exchange(_port(handle), request_bytes(ECHO, b" {}", headers=[AUTH]))
    assert empty.status == 200


async def test_a_streamed_json_request_that_is_not_an_object_is_refused(server_factory):
    handle = await server_factory(http_listen="127.0.0.1:0", token=TOKEN)
    async with (
        httpx.AsyncClient(base_url=f"http://{handle.running.http_address}", timeout=30) as client,
        # Read as an empty request, the stream would run on (heartbeats) instead of ending.
        asyncio.timeout(30),
    ):
        body = bytes([0]) + (2).to_bytes(4, "big") + b"[]"
        response = await client.post(
            "/pioneer.v1.ManifestService/WatchManifests",
            content=body,
            headers=http.headers(TOKEN, **{"content-type": "application/connect+json"}),
        )
    # A Connect stream ends with its error in the last envelope.
    last = response.content[5:]
    assert b'"invalid_argument"' in last, response.content
