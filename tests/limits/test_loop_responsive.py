"""The event loop stays responsive while a request at its caps is served.

The server under test runs on this test's own event loop, so a probe coroutine
that sleeps a millisecond at a time ticks only while the loop is free. Work done
on the loop (checking, hashing, counting, rendering, diffing megabytes) would
leave the probe stuck for the whole request; work in a worker thread lets it
tick throughout. The assertion counts ticks during the request; the longest
gap between ticks and the slowest health check are printed (`pytest -s`) as
the measured figures, not asserted, as timing on a shared machine varies.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from pioneer_grpc.caps import chat as chat_caps
from pioneer_grpc.caps import history as history_caps
from pioneer_grpc.caps import prompt as prompt_caps
from pioneer_grpc.service import history as history_service
from pioneer_grpc.service import manifests as manifests_service
from pioneer_grpc.service import provider as provider_service
from pioneer_grpc.v1 import (
    chat_pb2,
    history_pb2,
    history_service_pb2,
    history_service_pb2_grpc,
    manifest_service_pb2,
    prompt_pb2,
    provider_service_pb2,
)

# Each request is ~12 MB, under the server's 16 MiB message limit.
REQUEST_BYTES = 12_000_000
MIN_TICKS = 20
WORDS = "lorem ipsum dolor sit amet, consectetur adipiscing elit; "


def _text(chars: int) -> str:
    return (WORDS * (chars // len(WORDS) + 1))[:chars]


def _append() -> tuple[str, bytes]:
    per_entry = REQUEST_BYTES // history_caps.MAX_ENTRIES_PER_APPEND
    entries = [
        history_pb2.ConversationEntry(
            entry_id=f"e{i}", turn_id="u1", role=history_pb2.ENTRY_ROLE_USER, content=_text(per_entry)
        )
        for i in range(history_caps.MAX_ENTRIES_PER_APPEND)
    ]
    request = history_service_pb2.AppendEntriesRequest(thread_id="t", entries=entries)
    return "/pioneer.v1.HistoryService/AppendEntries", request.SerializeToString()


def _count() -> tuple[str, bytes]:
    texts = [_text(REQUEST_BYTES // history_caps.MAX_COUNT_TEXTS)] * history_caps.MAX_COUNT_TEXTS
    request = history_service_pb2.CountTokensRequest(texts=texts)
    return "/pioneer.v1.HistoryService/CountTokens", request.SerializeToString()


def _render() -> tuple[str, bytes]:
    per_message = REQUEST_BYTES // chat_caps.MAX_MESSAGES
    roles = (chat_pb2.CHAT_ROLE_USER, chat_pb2.CHAT_ROLE_ASSISTANT)
    messages = [
        chat_pb2.ChatMessage(role=roles[i % 2], content=_text(per_message))
        for i in range(chat_caps.MAX_MESSAGES - 1)
    ]
    request = provider_service_pb2.RenderChatRequestRequest(
        provider=provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES,
        chat_request=chat_pb2.ChatRequest(model="m", messages=messages),
    )
    return "/pioneer.v1.ProviderService/RenderChatRequest", request.SerializeToString()


def _diff() -> tuple[str, bytes]:
    def manifest(order: list[int]) -> prompt_pb2.PromptManifest:
        return prompt_pb2.PromptManifest(
            section_fingerprints=[
                prompt_pb2.SectionFingerprint(section_id=f"s{i}", fingerprint=f"f{i}") for i in order
            ],
            diagnostics=[
                prompt_pb2.PromptDiagnostic(code="c", message=_text(5_000) + str(i))
                for i in range(prompt_caps.MAX_MANIFEST_DIAGNOSTICS)
            ],
        )

    sections = list(range(prompt_caps.MAX_MANIFEST_SECTIONS))
    ref = manifest_service_pb2.ManifestRef
    request = manifest_service_pb2.DiffManifestsRequest(
        base=ref(manifest=manifest(sections)), target=ref(manifest=manifest(sections[::-1]))
    )
    return "/pioneer.v1.ManifestService/DiffManifests", request.SerializeToString()


# RPC -> (request builder, where its heavy work is looked up).
CASES: dict[str, Callable[[], tuple[str, bytes]]] = {
    "AppendEntries": _append,
    "CountTokens": _count,
    "RenderChatRequest": _render,
    "DiffManifests": _diff,
}
# The functions that do a request's heavy work, as the use cases call them.
HEAVY = [
    (history_service, "count_blocking"),
    (history_service, "violations_of_each"),
    (history_service, "content_hash"),
    (provider_service, "render"),
    (manifests_service, "diff_manifests"),
    (manifests_service, "violations_of"),
]


async def _probe(stop: asyncio.Event, ticks: list[float]) -> None:
    while not stop.is_set():
        ticks.append(time.perf_counter())
        await asyncio.sleep(0.001)


async def _health(stub: Any, stop: asyncio.Event, latencies: list[float]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        await stub.Check(health_pb2.HealthCheckRequest(), timeout=30)
        latencies.append(time.perf_counter() - started)
        await asyncio.sleep(0.01)


def _recording(calls: list[int], function: Callable[..., Any]) -> Callable[..., Any]:
    def recorded(*args: Any, **kwargs: Any) -> Any:
        calls.append(threading.get_ident())
        return function(*args, **kwargs)

    return recorded


@pytest.mark.parametrize("case", list(CASES))
async def test_heavy_work_runs_off_the_loop_which_keeps_ticking(
    server, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = 64 * 1024 * 1024
    channel = grpc.aio.insecure_channel(
        server.address,
        options=[("grpc.max_receive_message_length", big), ("grpc.max_send_message_length", big)],
    )
    history = history_service_pb2_grpc.HistoryServiceStub(channel)
    health = health_pb2_grpc.HealthStub(server.channel())
    await health.Check(health_pb2.HealthCheckRequest())
    await history.CreateThread(history_service_pb2.CreateThreadRequest(thread_id="t"))
    await history.CountTokens(history_service_pb2.CountTokensRequest(texts=["warm up"]))
    calls: list[int] = []
    for module, name in HEAVY:
        monkeypatch.setattr(module, name, _recording(calls, getattr(module, name)))
    # Sent and received as bytes: the client shares this loop, and its own (de)serializing
    # of megabytes is not the server's work.
    method, request = CASES[case]()
    call = channel.unary_unary(method)(request)
    stop = asyncio.Event()
    ticks: list[float] = []
    latencies: list[float] = []
    probes = [asyncio.create_task(_probe(stop, ticks)), asyncio.create_task(_health(health, stop, latencies))]
    try:
        started = time.perf_counter()
        await call
        elapsed = time.perf_counter() - started
    finally:
        stop.set()
        await asyncio.gather(*probes)
        await channel.close()
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    print(
        f"{case}: request {elapsed * 1000:.0f} ms, {len(ticks)} ticks, longest loop gap "
        f"{max(gaps, default=0) * 1000:.1f} ms, {len(latencies)} health checks, slowest "
        f"{max(latencies, default=0) * 1000:.1f} ms"
    )
    loop_thread = threading.get_ident()
    assert calls, "no heavy work was recorded"
    assert loop_thread not in calls
    # DiffManifests is linear and capped: even at its caps it is over too soon to count on ticks.
    assert len(ticks) >= (MIN_TICKS if case != "DiffManifests" else 1)
