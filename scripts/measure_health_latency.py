"""Health latency while the largest allowed requests are served, each in its own process.

    .venv/bin/python scripts/measure_health_latency.py [rounds]

Starts `pioneer-grpc serve` (SQLite, a temporary home) on a free loopback port.
For each request kind, a client process sends a ~12 MB request at its caps
`rounds` times while this process checks grpc.health.v1 every 10 ms; prints the
request times and the health checks' median and slowest latency, and the same
for an idle server and for the first token count (it loads the tokenizer) first.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from pioneer_grpc.caps import chat as chat_caps
from pioneer_grpc.caps import history as history_caps
from pioneer_grpc.v1 import chat_pb2, history_pb2, history_service_pb2, provider_service_pb2

REQUEST_BYTES = 12_000_000
WORDS = "lorem ipsum dolor sit amet, consectetur adipiscing elit; "
BIG = 64 << 20


def _text(chars: int) -> str:
    return (WORDS * (chars // len(WORDS) + 1))[:chars]


def _request(kind: str, round_: int) -> tuple[str, bytes]:
    if kind == "AppendEntries":
        per_entry = REQUEST_BYTES // history_caps.MAX_ENTRIES_PER_APPEND
        entries = [
            history_pb2.ConversationEntry(
                entry_id=f"e{round_}-{i}", turn_id=f"u{round_}", role=1, content=_text(per_entry)
            )
            for i in range(history_caps.MAX_ENTRIES_PER_APPEND)
        ]
        message = history_service_pb2.AppendEntriesRequest(thread_id="t", entries=entries)
        return "/pioneer.v1.HistoryService/AppendEntries", message.SerializeToString()
    if kind == "CountTokens":
        texts = [_text(REQUEST_BYTES // history_caps.MAX_COUNT_TEXTS)] * history_caps.MAX_COUNT_TEXTS
        message = history_service_pb2.CountTokensRequest(texts=texts)
        return "/pioneer.v1.HistoryService/CountTokens", message.SerializeToString()
    per_message = REQUEST_BYTES // chat_caps.MAX_MESSAGES
    messages = [
        chat_pb2.ChatMessage(
            role=(chat_pb2.CHAT_ROLE_USER, chat_pb2.CHAT_ROLE_ASSISTANT)[i % 2], content=_text(per_message)
        )
        for i in range(chat_caps.MAX_MESSAGES - 1)
    ]
    message = provider_service_pb2.RenderChatRequestRequest(
        provider=provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES,
        chat_request=chat_pb2.ChatRequest(model="m", messages=messages),
    )
    return "/pioneer.v1.ProviderService/RenderChatRequest", message.SerializeToString()


def _client(
    address: str,
    kind: str,
    rounds: int,
    started: multiprocessing.synchronize.Event,
    out: multiprocessing.Queue,
) -> None:
    requests = [_request(kind, i) for i in range(rounds)]
    channel = grpc.insecure_channel(
        address, options=[("grpc.max_receive_message_length", BIG), ("grpc.max_send_message_length", BIG)]
    )
    if kind == "AppendEntries":
        channel.unary_unary("/pioneer.v1.HistoryService/CreateThread")(
            history_service_pb2.CreateThreadRequest(thread_id="t").SerializeToString()
        )
    started.set()
    times = []
    for method, body in requests:
        begun = time.perf_counter()
        channel.unary_unary(method)(body, timeout=120)
        times.append(time.perf_counter() - begun)
    out.put(times)


def _probe(health: health_pb2_grpc.HealthStub, until: callable) -> list[float]:
    latencies = []
    while not until():
        begun = time.perf_counter()
        health.Check(health_pb2.HealthCheckRequest(), timeout=30)
        latencies.append(time.perf_counter() - begun)
        time.sleep(0.01)
    return latencies


def _warm_up(address: str, health: health_pb2_grpc.HealthStub) -> str:
    """One small CountTokens: the first token count loads the tokenizer, once per process, which is
    start-up work rather than serving a large request, so it is measured on its own."""
    done = multiprocessing.Event()

    def count() -> None:
        channel = grpc.insecure_channel(address)
        request = history_service_pb2.CountTokensRequest(texts=["warm up"])
        channel.unary_unary("/pioneer.v1.HistoryService/CountTokens")(request.SerializeToString(), timeout=60)
        done.set()

    threading.Thread(target=count, daemon=True).start()
    return _summary(_probe(health, done.is_set))


def _summary(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    if not ordered:
        return "0 checks"
    median, slowest = ordered[len(ordered) // 2] * 1000, ordered[-1] * 1000
    return f"{len(ordered)} checks, median {median:.1f} ms, slowest {slowest:.1f} ms"


def main(rounds: int) -> None:
    port = subprocess.check_output([sys.executable, "scripts/free_port.py"], text=True).strip()
    address = f"127.0.0.1:{port}"
    home = tempfile.mkdtemp()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "pioneer-grpc"), "serve", "--listen", address, "--home", home],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        health = health_pb2_grpc.HealthStub(grpc.insecure_channel(address))
        health.Check(health_pb2.HealthCheckRequest(), timeout=30, wait_for_ready=True)
        deadline = time.perf_counter() + 2
        print(f"idle: {_summary(_probe(health, lambda: time.perf_counter() > deadline))}")
        print(f"warm-up: {_warm_up(address, health)}")
        for kind in ("AppendEntries", "CountTokens", "RenderChatRequest"):
            started, out = multiprocessing.Event(), multiprocessing.Queue()
            client = multiprocessing.Process(target=_client, args=(address, kind, rounds, started, out))
            client.start()
            started.wait(120)
            latencies = _probe(health, lambda c=client, o=out: not c.is_alive() or not o.empty())
            times = out.get(timeout=300)
            client.join()
            shown = ", ".join(f"{t * 1000:.0f}" for t in times)
            print(f"{kind} x{rounds} (ms: {shown}): {_summary(latencies)}")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    os.chdir(Path(__file__).resolve().parents[1])
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
