"""ImportThread on the HTTP edge: a Connect client stream (enveloped JSON messages in one POST body,
as curl sends them) stores the thread as gRPC does; a broken stream writes nothing."""

from __future__ import annotations

import base64
import json

import httpx

from pioneer_grpc.client import user_entry
from pioneer_grpc.v1 import history_service_pb2 as pb
from tests.web import connect_http as http

H = "/pioneer.v1.HistoryService"


def _client_stream(messages: list[dict[str, object]]) -> bytes:
    return b"".join(http.envelope(m) for m in messages)


def _answer(body: bytes) -> list[tuple[int, dict[str, object]]]:
    found = []
    while body:
        size = int.from_bytes(body[1:5], "big")
        found.append((body[0], json.loads(body[5 : 5 + size])))
        body = body[5 + size :]
    return found


async def test_import_over_http_is_a_client_stream(database_url, server_factory):
    handle = await server_factory(database_url=database_url, http_listen="127.0.0.1:0")
    async with httpx.AsyncClient(base_url=f"http://{handle.running.http_address}", timeout=30) as client:
        assert (await http.unary(client, f"{H}/CreateThread", {"threadId": "src"})).status_code == 200
        entries = [user_entry(f"e{i}", f"line {i} " + "é" * 50, turn_id="u1") for i in range(3)]
        request = pb.CompleteTurnRequest(thread_id="src", turn_id="u1", entries=entries)
        assert (await http.unary(client, f"{H}/CompleteTurn", request)).status_code == 200
        exported = b""
        async for flags, message in http.stream(client, f"{H}/ExportThread", {"threadId": "src"}):
            if not flags & http.END_STREAM:
                exported += base64.b64decode(message["chunk"])
        pieces = [exported[i : i + 100] for i in range(0, len(exported), 100)]
        assert len(pieces) > 3
        sent = [{"threadId": "copy", "chunk": base64.b64encode(pieces[0]).decode()}] + [
            {"chunk": base64.b64encode(p).decode()} for p in pieces[1:]
        ]
        stream_headers = http.headers(**{"content-type": "application/connect+json"})

        # A stream cut before its closing line: refused, nothing written.
        cut = await client.post(
            f"{H}/ImportThread", content=_client_stream(sent[:-2]), headers=stream_headers
        )
        assert cut.status_code == 200
        [(flags, end)] = _answer(cut.content)
        assert flags & http.END_STREAM and end["error"]["code"] == "invalid_argument", end
        missing = await http.unary(client, f"{H}/GetThread", {"threadId": "copy"})
        assert missing.status_code == 404

        whole = await client.post(f"{H}/ImportThread", content=_client_stream(sent), headers=stream_headers)
        assert whole.status_code == 200, whole.content
        (flags, imported), (end_flags, end) = _answer(whole.content)
        assert (flags, end_flags, end) == (0, http.END_STREAM, {}), end
        thread = imported["thread"]
        # entry_count is an int64: a string in protobuf JSON.
        assert (thread["threadId"], thread["entryCount"], imported["turnCount"]) == ("copy", "3", 1)
        listed = pb.ListEntriesResponse()
        http.parsed(await http.unary(client, f"{H}/ListEntries", {"threadId": "copy"}), listed)
        assert [e.content for e in listed.entries] == [e.content for e in entries]
