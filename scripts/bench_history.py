"""LoadConversationHistory latency against re-tokenizing the same entries, measured in one run.

    .venv/bin/python scripts/bench_history.py [--loads N]

Builds a thread of 200 completed entries (~100k tokens) on a SQLite server
started here (or on --addr), then times N LoadConversationHistory RPCs end to
end (repeated, then each a new question so no earlier answer is reused) and N
re-tokenizations of the same entry texts with tiktoken. The thread's
context is large enough that every load sends everything: the measured path is
read, decide, build messages, send, with no summary model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import grpc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pioneer_grpc.history.render import entry_counted_texts  # noqa: E402
from pioneer_grpc.history.tokens import count_blocking, load_encoding_blocking  # noqa: E402
from pioneer_grpc.v1 import history_pb2, history_service_pb2, history_service_pb2_grpc  # noqa: E402

ENTRIES = 200
TOKENS_PER_ENTRY = 500
VOCABULARY = (
    "the build fails in src/server/app.py because load_config returns None when the file is missing; "
    "we decided to keep the default path, add a fallback, and retry with exponential backoff. "
    "Tests in tests/store/test_entries.py cover SQLite and PostgreSQL; the migration stays 0001. "
    "def parse(items: list[str]) -> dict[str, int]: return {k: len(k) for k in items} # 42 ms p99"
).split()


def _text(rng: random.Random, tokens: int) -> str:
    # About 1.55 tokens per word for this vocabulary.
    return " ".join(rng.choice(VOCABULARY) for _ in range(int(tokens / 1.55)))


def build_entries(seed: int = 7) -> list[history_pb2.ConversationEntry]:
    rng = random.Random(seed)
    entries = []
    for i in range(ENTRIES):
        turn = f"turn-{i // 2}"
        role = history_pb2.ENTRY_ROLE_USER if i % 2 == 0 else history_pb2.ENTRY_ROLE_ASSISTANT
        entries.append(
            history_pb2.ConversationEntry(
                entry_id=f"e{i}", turn_id=turn, role=role, content=_text(rng, TOKENS_PER_ENTRY)
            )
        )
    return entries


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _retokenize(entries: list[history_pb2.ConversationEntry]) -> int:
    return sum(sum(count_blocking(entry_counted_texts(e))) for e in entries)


async def bench_load_history(address: str, token: str, loads: int = 200) -> dict[str, Any]:
    """Builds the thread on the server at `address`, then times loads and re-tokenizing."""
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    entries = build_entries()
    thread_id = f"bench-{uuid.uuid4().hex[:8]}"
    async with grpc.aio.insecure_channel(address) as channel:
        history = history_service_pb2_grpc.HistoryServiceStub(channel)
        await history.CreateThread(
            history_service_pb2.CreateThreadRequest(
                thread_id=thread_id,
                config=history_pb2.ThreadConfig(max_context_tokens=400_000, response_reserve_tokens=16_000),
            ),
            metadata=metadata,
        )
        for start in range(0, ENTRIES, 20):
            batch = entries[start : start + 20]
            await history.AppendEntries(
                history_service_pb2.AppendEntriesRequest(thread_id=thread_id, entries=batch),
                metadata=metadata,
            )
            for turn_id in dict.fromkeys(e.turn_id for e in batch):
                await history.CompleteTurn(
                    history_service_pb2.CompleteTurnRequest(thread_id=thread_id, turn_id=turn_id),
                    metadata=metadata,
                )
        request = history_service_pb2.LoadConversationHistoryRequest(thread_id=thread_id)
        for _ in range(20):  # warm up the channel, the pool and the caches
            response = await history.LoadConversationHistory(request, metadata=metadata)
        rpc_ms = await _time_loads(history, request, metadata, loads)
        # A turn id that matches nothing changes no answer but makes every load a new
        # question: the full read, decide and build path, as after each new turn.
        cold_ms = await _time_loads(history, request, metadata, loads, vary_exclude=True)
    report = response.report
    assert report.decision == history_pb2.HISTORY_DECISION_FULL and report.entries_kept == ENTRIES
    load_encoding_blocking()
    _retokenize(entries)
    tokenize_ms: list[float] = []
    for _ in range(loads):
        began = time.perf_counter()
        counted = _retokenize(entries)
        tokenize_ms.append((time.perf_counter() - began) * 1000)
    rpc_p50, cold_p50, tok_p50 = (statistics.median(v) for v in (rpc_ms, cold_ms, tokenize_ms))
    return {
        "entries": ENTRIES,
        "history_tokens": report.tokens_after,
        "retokenized_tokens": counted,
        "loads": loads,
        "rpc_p50_ms": round(rpc_p50, 3),
        "rpc_p99_ms": round(_percentile(rpc_ms, 0.99), 3),
        "rpc_uncached_p50_ms": round(cold_p50, 3),
        "rpc_uncached_p99_ms": round(_percentile(cold_ms, 0.99), 3),
        "retokenize_p50_ms": round(tok_p50, 3),
        "retokenize_p99_ms": round(_percentile(tokenize_ms, 0.99), 3),
        "retokenize_over_rpc_p50": round(tok_p50 / rpc_p50, 2),
        "retokenize_over_uncached_rpc_p50": round(tok_p50 / cold_p50, 2),
    }


async def _time_loads(
    history: Any,
    request: history_service_pb2.LoadConversationHistoryRequest,
    metadata: tuple[tuple[str, str], ...],
    loads: int,
    vary_exclude: bool = False,
) -> list[float]:
    times: list[float] = []
    for i in range(loads):
        if vary_exclude:
            request.exclude_turn_id = f"no-such-turn-{uuid.uuid4().hex[:8]}-{i}"
        began = time.perf_counter()
        await history.LoadConversationHistory(request, metadata=metadata)
        times.append((time.perf_counter() - began) * 1000)
    request.exclude_turn_id = ""
    return times


async def _main(args: argparse.Namespace) -> dict[str, Any]:
    if args.addr:
        return await bench_load_history(args.addr, args.token, args.loads)
    from pioneer_grpc.config import Config
    from pioneer_grpc.server.app import start_server

    with tempfile.TemporaryDirectory() as home:
        running = await start_server(Config(listen="127.0.0.1:0", home=Path(home), log_level="WARNING"))
        try:
            return await bench_load_history(running.address, "", args.loads)
        finally:
            await running.stop(0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--addr", help="a running server; default: start one on SQLite here")
    parser.add_argument("--token", default="")
    parser.add_argument("--loads", type=int, default=200)
    print(json.dumps(asyncio.run(_main(parser.parse_args())), indent=2))
