"""ExportThread and ImportThread through real servers: a thread exported from PostgreSQL and imported
into SQLite loads and renders byte for byte as it did; an import that is not whole, or is cancelled,
writes nothing."""

from __future__ import annotations

import asyncio
import json

import pytest

from pioneer_grpc.client import RpcFailure
from pioneer_grpc.v1 import chat_pb2, history_pb2, history_service_pb2, provider_service_pb2
from tests.history.agent_turns import tool_turn
from tests.history.rpc import config
from tests.turn.test_prefix_after_completed_turn import _round
from tests.turn.test_prepare_turn import Client

P = provider_service_pb2
PROVIDERS = [
    P.PROVIDER_ANTHROPIC_MESSAGES,
    P.PROVIDER_OPENAI_CHAT_COMPLETIONS,
    P.PROVIDER_OPENAI_RESPONSES,
    P.PROVIDER_GEMINI_GENERATE_CONTENT,
    P.PROVIDER_AMAZON_BEDROCK_CONVERSE,
]
PNG = bytes(range(256)) * 8


async def _exported(client: Client, thread_id: str) -> bytes:
    return b"".join([r.chunk async for r in client.export_thread(thread_id=thread_id)])


def _requests(stream: bytes, thread_id: str = "", size: int = 64 * 1024):
    pieces = [stream[i : i + size] for i in range(0, len(stream), size)] or [b""]
    return [
        history_service_pb2.ImportThreadRequest(thread_id=thread_id if i == 0 else "", chunk=piece)
        for i, piece in enumerate(pieces)
    ]


async def _loop(client: Client, thread_id: str, turns: int) -> None:
    """Tool turns at a budget that clears old results and summarizes; an image, a failed result."""
    request = history_service_pb2.CreateThreadRequest(thread_id=thread_id, config=config(9_000, 1_000))
    request.config.model = "claude-sonnet-4-5"
    await client.create_thread(request)
    for i in range(turns):
        entries = tool_turn(i, lines=40)
        if i == 1:
            entries[0].content_parts.add(image=chat_pb2.MediaPart(mime_type="image/png", data=PNG))
        if i == 2:
            entries[2].is_error = True
        prepare = _round(i, P.PROVIDER_ANTHROPIC_MESSAGES)
        prepare.thread_id = thread_id
        prepare.new_entries[0].CopyFrom(entries[0])
        await client.prepare_turn(prepare)
        await client.complete_turn(thread_id=thread_id, turn_id=entries[0].turn_id, entries=entries[1:])


async def _seen(client: Client, thread_id: str) -> list[bytes]:
    loaded = await client.load_conversation_history(thread_id=thread_id, exclude_turn_id="turn-12")
    seen = [m.SerializeToString(deterministic=True) for m in loaded.messages]
    report = history_pb2.HistoryDecisionReport()
    report.CopyFrom(loaded.report)
    seen.append(report.SerializeToString(deterministic=True))
    for provider in PROVIDERS:
        prepare = _round(12, provider)
        prepare.thread_id = thread_id
        seen.append((await client.prepare_turn(prepare)).provider_body_json.encode())
    return seen


async def test_a_thread_exported_from_postgres_loads_and_renders_the_same_on_sqlite(
    postgres_url, server_factory
):
    production, laptop = await server_factory(database_url=postgres_url), await server_factory()
    source, target = Client(production), Client(laptop)
    await _loop(source, "t", 12)
    stream = await _exported(source, "t")
    lines = [json.loads(line) for line in stream.splitlines()]
    assert lines[0]["version"] == 1 and lines[-1] == {
        "type": "end",
        "turns": 12,
        "entries": 48,
        "summaries": 2,
    }
    imported = await target.import_thread(_requests(stream, size=4096))
    assert (imported.thread.thread_id, imported.thread.entry_count, imported.turn_count) == ("t", 48, 12)
    assert imported.thread.create_time == (await source.get_thread(thread_id="t")).thread.create_time
    # Exported again from SQLite: the same bytes.
    assert await _exported(target, "t") == stream
    assert await _seen(target, "t") == await _seen(source, "t")


async def test_an_import_that_is_not_whole_or_is_cancelled_writes_nothing(server):
    client = Client(server)
    await _loop(client, "t", 3)
    stream = await _exported(client, "t")
    lines = stream.splitlines(keepends=True)
    header = json.loads(lines[0])
    refused = {
        "newer": (
            json.dumps({**header, "version": 2}).encode() + b"\n" + b"".join(lines[1:]),
            "UNSUPPORTED_EXPORT_VERSION",
        ),
        "cut": (b"".join(lines[:-1]), "INVALID_ARGUMENT"),
        "torn": (b"".join(lines)[:-40], "INVALID_ARGUMENT"),
        "counts": (b"".join(lines[:-2] + lines[-1:]), "INVALID_ARGUMENT"),
    }
    for name, (bad, reason) in refused.items():
        with pytest.raises(RpcFailure) as failure:
            await client.import_thread(_requests(bad, name))
        assert (failure.value.code.name, failure.value.reason) == ("INVALID_ARGUMENT", reason), name
        with pytest.raises(RpcFailure) as missing:
            await client.get_thread(thread_id=name)
        assert missing.value.reason == "THREAD_NOT_FOUND"
    with pytest.raises(RpcFailure) as taken:
        await client.import_thread(_requests(stream))
    assert (taken.value.code.name, taken.value.reason) == ("ALREADY_EXISTS", "THREAD_EXISTS")
    with pytest.raises(RpcFailure) as large:
        await client.import_thread(
            [history_service_pb2.ImportThreadRequest(chunk=b"x" * (2 * 1024 * 1024 + 1))]
        )
    assert large.value.code.name == "INVALID_ARGUMENT"

    # Cancelled after all but the last chunk: nothing is written; the whole stream then is.
    requests = _requests(stream, "cancelled", size=1024)
    sent = asyncio.Event()

    async def stalled():
        for request in requests[:-1]:
            yield request
        sent.set()
        await asyncio.Event().wait()

    call = asyncio.create_task(client.import_thread(stalled()))
    await asyncio.wait_for(sent.wait(), 10)
    await asyncio.sleep(0.2)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    with pytest.raises(RpcFailure):
        await client.get_thread(thread_id="cancelled")
    done = await client.import_thread(requests)
    assert done.thread.entry_count == (await client.get_thread(thread_id="t")).thread.entry_count
