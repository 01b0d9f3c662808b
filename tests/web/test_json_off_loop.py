"""Unary JSON over HTTP is transcoded to binary protobuf and back in worker threads, never on the loop.

The loop is the gRPC server's too: a request at its caps parsed there would hold
every call of both edges (pioneer_grpc/server/web/transcode.py). What the client
sends and receives is the same JSON; bodies the transcoding must not touch (no
token, malformed, compressed) reach the Connect runtime as they were sent.
"""

from __future__ import annotations

import gzip
import threading

import httpx
import pytest

from pioneer_grpc.server.web import transcode
from pioneer_grpc.v1 import history_pb2, history_service_pb2
from tests.web import connect_http as http

TOKEN = "s3cret"
HISTORY = "/pioneer.v1.HistoryService"
# Under the 16 MiB message cap, as JSON: 100 entries of about 120 KB each.
ENTRIES = 100
ENTRY_TEXT = "lorem ipsum dolor sit amet, é ü 日本; " * 3000


@pytest.fixture
def threads_seen(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    """The threads each transcoding ran in, by direction."""
    seen: dict[str, list[int]] = {"to_binary": [], "to_json": []}
    for name in seen:
        original = getattr(transcode, name)

        def recording(*args, _name=name, _original=original):
            seen[_name].append(threading.get_ident())
            return _original(*args)

        monkeypatch.setattr(transcode, name, recording)
    return seen


@pytest.fixture
async def client(server_factory):
    handle = await server_factory(http_listen="127.0.0.1:0", token=TOKEN)
    async with httpx.AsyncClient(base_url=f"http://{handle.running.http_address}", timeout=120) as client:
        yield client


async def test_a_request_at_its_caps_is_parsed_and_answered_off_the_loop(client, threads_seen):
    loop_thread = threading.get_ident()  # the server runs on this test's loop
    await http.unary(client, f"{HISTORY}/CreateThread", {"threadId": "big"}, TOKEN)
    threads_seen["to_binary"].clear()
    threads_seen["to_json"].clear()
    request = history_service_pb2.AppendEntriesRequest(
        thread_id="big",
        entries=[
            history_pb2.ConversationEntry(
                entry_id=f"e{i}", turn_id="u1", role=history_pb2.ENTRY_ROLE_USER, content=f"{i} {ENTRY_TEXT}"
            )
            for i in range(ENTRIES)
        ],
    )
    response = await http.unary(client, f"{HISTORY}/AppendEntries", request, TOKEN)
    answer = http.parsed(response, history_service_pb2.AppendEntriesResponse())
    assert answer.created_count == ENTRIES
    assert [e.content for e in answer.entries] == [e.content for e in request.entries]
    assert response.headers["content-type"] == "application/json"
    assert len(threads_seen["to_binary"]) == 1
    assert len(threads_seen["to_json"]) == 1
    assert loop_thread not in threads_seen["to_binary"] + threads_seen["to_json"]


async def test_without_the_token_the_body_is_never_parsed(client, threads_seen):
    response = await client.post(f"{HISTORY}/GetThread", content=b'{"threadId": "x"}', headers=http.headers())
    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"
    assert threads_seen["to_binary"] == []


async def test_a_malformed_body_gets_the_runtimes_answer(client, threads_seen):
    response = await client.post(f"{HISTORY}/GetThread", content=b"{nope", headers=http.headers(TOKEN))
    assert response.status_code == 400
    assert http.reasons(response.json()) == ["MALFORMED_REQUEST"]
    assert len(threads_seen["to_binary"]) == 1  # tried, then handed over as sent
    assert threads_seen["to_json"] == []


async def test_an_error_answer_passes_unchanged(client, threads_seen):
    response = await http.unary(client, f"{HISTORY}/GetThread", {"threadId": "nosuch"}, TOKEN)
    assert response.status_code == 404
    assert http.reasons(response.json()) == ["THREAD_NOT_FOUND"]
    assert threads_seen["to_json"] == []


async def test_a_compressed_body_is_left_to_the_runtime(client, threads_seen):
    await http.unary(client, f"{HISTORY}/CreateThread", {"threadId": "gz"}, TOKEN)
    threads_seen["to_binary"].clear()
    response = await client.post(
        f"{HISTORY}/GetThread",
        content=gzip.compress(b'{"threadId": "gz"}'),
        headers=http.headers(TOKEN, **{"content-encoding": "gzip"}),
    )
    assert response.status_code == 200, response.text
    assert response.json()["thread"]["threadId"] == "gz"
    assert threads_seen["to_binary"] == []
