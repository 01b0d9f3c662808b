"""Health answers SERVING while a request at its caps is in flight, and that request succeeds.

A request of ~12 MB (under the 16 MiB message limit) is parsed a piece at a
time in a worker thread, and a response of megabytes is encoded the same way,
so the event loop and the GIL are never held for the whole message at once
(pioneer_grpc/wire.py, providers/body_json.py). The test asserts behaviour: health checks
complete with SERVING before the large call is over, the large request was
decoded and its answer encoded off the event loop, and the answer is whole.
Timings are printed (`pytest -s`), not asserted.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import grpc
import orjson
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from pioneer_grpc import wire
from pioneer_grpc.caps import chat as chat_caps
from pioneer_grpc.caps import history as history_caps
from pioneer_grpc.providers import body_json
from pioneer_grpc.v1 import (
    chat_pb2,
    history_pb2,
    history_service_pb2,
    history_service_pb2_grpc,
    provider_service_pb2,
)

REQUEST_BYTES = 12_000_000
BIG = 64 * 1024 * 1024
WORDS = "lorem ipsum dolor sit amet, é ü 日本; "
SERVING = health_pb2.HealthCheckResponse.SERVING


def _text(size: int, salt: int) -> str:
    """About `size` bytes of UTF-8, some characters multi-byte."""
    chars = size * len(WORDS) // len(WORDS.encode())
    return f"{salt}:" + (WORDS * (chars // len(WORDS) + 1))[:chars]


def _append_request() -> history_service_pb2.AppendEntriesRequest:
    per_entry = REQUEST_BYTES // history_caps.MAX_ENTRIES_PER_APPEND
    entries = [
        history_pb2.ConversationEntry(
            entry_id=f"e{i}", turn_id="u1", role=history_pb2.ENTRY_ROLE_USER, content=_text(per_entry, i)
        )
        for i in range(history_caps.MAX_ENTRIES_PER_APPEND)
    ]
    return history_service_pb2.AppendEntriesRequest(thread_id="t", entries=entries)


def _render_request() -> provider_service_pb2.RenderChatRequestRequest:
    per_message = REQUEST_BYTES // chat_caps.MAX_MESSAGES
    roles = (chat_pb2.CHAT_ROLE_USER, chat_pb2.CHAT_ROLE_ASSISTANT)
    messages = [
        chat_pb2.ChatMessage(role=roles[i % 2], content=_text(per_message, i))
        for i in range(chat_caps.MAX_MESSAGES - 1)
    ]
    return provider_service_pb2.RenderChatRequestRequest(
        provider=provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES,
        chat_request=chat_pb2.ChatRequest(model="m", messages=messages),
    )


def _recording(threads: list[int], function: Callable[..., Any]) -> Callable[..., Any]:
    def recorded(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return function(*args, **kwargs)

    return recorded


async def _health_while(call: Any, stub: Any, answers: list[tuple[int, float]]) -> None:
    """Checks health back to back until the call is over, keeping the answers given before it was."""
    while not call.done():
        started = time.perf_counter()
        response = await stub.Check(health_pb2.HealthCheckRequest(), timeout=30)
        if not call.done():
            answers.append((response.status, time.perf_counter() - started))


async def _served_while_checking_health(
    server: Any, method: str, request: bytes, monkeypatch: pytest.MonkeyPatch
) -> tuple[bytes, list[tuple[int, float]], list[int], list[int]]:
    channel = grpc.aio.insecure_channel(
        server.address,
        options=[("grpc.max_receive_message_length", BIG), ("grpc.max_send_message_length", BIG)],
    )
    health = health_pb2_grpc.HealthStub(server.channel())
    history = history_service_pb2_grpc.HistoryServiceStub(channel)
    assert (await health.Check(health_pb2.HealthCheckRequest())).status == SERVING
    await history.CreateThread(history_service_pb2.CreateThreadRequest(thread_id="t"))
    await history.CountTokens(
        history_service_pb2.CountTokensRequest(texts=["warm up"])
    )  # loads the tokenizer
    decoded_in: list[int] = []
    encoded_in: list[int] = []
    monkeypatch.setattr(wire, "message_pieces", _recording(decoded_in, wire.message_pieces))
    monkeypatch.setattr(wire, "repeated_records", _recording(encoded_in, wire.repeated_records))
    # A provider body is encoded to UTF-8 as it is written, in the render's worker thread.
    monkeypatch.setattr(body_json, "encoded", _recording(encoded_in, body_json.encoded))
    answers: list[tuple[int, float]] = []
    try:
        # Sent and received as bytes: the client shares this loop, and its own
        # (de)serializing of megabytes is not the server's work.
        call = channel.unary_unary(method)(request, timeout=120)
        started = time.perf_counter()
        checking = asyncio.create_task(_health_while(call, health, answers))
        response = await call
        elapsed = time.perf_counter() - started
        await checking
    finally:
        await channel.close()
    slowest = max((latency for _, latency in answers), default=0.0)
    print(f"{method}: {elapsed * 1000:.0f} ms, {len(answers)} health checks, slowest {slowest * 1000:.1f} ms")
    return response, answers, decoded_in, encoded_in


def _assert_served_off_the_loop(
    answers: list[tuple[int, float]], decoded_in: list[int], encoded_in: list[int]
) -> None:
    assert answers, "no health check was answered while the large request was served"
    assert {status for status, _ in answers} == {SERVING}
    loop_thread = threading.get_ident()
    assert decoded_in, "the large request was not parsed off the loop"
    assert loop_thread not in decoded_in, "the large request was not parsed off the loop"
    assert encoded_in, "the large answer was not encoded off the loop"
    assert loop_thread not in encoded_in, "the large answer was not encoded off the loop"


async def test_health_serves_during_an_append_at_its_caps(
    pg_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    request = _append_request()
    assert REQUEST_BYTES * 0.9 < request.ByteSize() < 16 * 1024 * 1024
    raw, answers, decoded_in, encoded_in = await _served_while_checking_health(
        pg_server, "/pioneer.v1.HistoryService/AppendEntries", request.SerializeToString(), monkeypatch
    )
    _assert_served_off_the_loop(answers, decoded_in, encoded_in)
    response = history_service_pb2.AppendEntriesResponse.FromString(raw)
    assert response.created_count == history_caps.MAX_ENTRIES_PER_APPEND
    assert [entry.content for entry in response.entries] == [entry.content for entry in request.entries]


async def test_health_serves_during_a_render_at_its_caps(
    server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    request = _render_request()
    assert REQUEST_BYTES * 0.9 < request.ByteSize() < 16 * 1024 * 1024
    raw, answers, decoded_in, encoded_in = await _served_while_checking_health(
        server, "/pioneer.v1.ProviderService/RenderChatRequest", request.SerializeToString(), monkeypatch
    )
    _assert_served_off_the_loop(answers, decoded_in, encoded_in)
    response = provider_service_pb2.RenderChatRequestResponse.FromString(raw)
    body = json.loads(response.body_json)
    # Anthropic's user turns are block lists (so breakpoints move without reshaping them).
    texts = [
        m["content"] if isinstance(m["content"], str) else m["content"][0]["text"] for m in body["messages"]
    ]
    assert texts == [m.content for m in request.chat_request.messages]
    # The text is the one encoder's (orjson), though written in pieces.
    assert response.body_json == orjson.dumps(body).decode()
