"""How long one AppendEntries holds up another thread's reads, on SQLite, per batch size.

    .venv/bin/python scripts/measure_append_stall.py 10 50 100

Starts a server on loopback under a temporary home, keeps reading one thread's
history in a loop, appends a batch of N entries (1 KB each) to another thread,
and prints the append's time and the slowest read that ran alongside it.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

import grpc

from pioneer_grpc.config import Config
from pioneer_grpc.server.app import start_server
from pioneer_grpc.v1 import history_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb
from pioneer_grpc.v1 import history_service_pb2_grpc as pb_grpc


def _entries(count: int, prefix: str, turn: str) -> list[history_pb2.ConversationEntry]:
    return [
        history_pb2.ConversationEntry(
            entry_id=f"{prefix}{i}", turn_id=turn, role=history_pb2.ENTRY_ROLE_USER, content="word " * 200
        )
        for i in range(count)
    ]


async def _reads(stub: pb_grpc.HistoryServiceStub, stop: asyncio.Event, latencies: list[float]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        await stub.LoadConversationHistory(
            pb.LoadConversationHistoryRequest(thread_id="reader", dry_run=True)
        )
        latencies.append(time.perf_counter() - started)


async def main(sizes: list[int]) -> None:
    running = await start_server(
        Config(listen="127.0.0.1:0", home=Path(tempfile.mkdtemp()), grace_seconds=0.5)
    )
    channel = grpc.aio.insecure_channel(
        running.address, options=[("grpc.max_receive_message_length", 64 << 20)]
    )
    stub = pb_grpc.HistoryServiceStub(channel)
    await stub.CreateThread(
        pb.CreateThreadRequest(thread_id="reader", config=history_pb2.ThreadConfig(model="m"))
    )
    await stub.AppendEntries(pb.AppendEntriesRequest(thread_id="reader", entries=_entries(20, "r", "t")))
    await stub.CompleteTurn(pb.CompleteTurnRequest(thread_id="reader", turn_id="t"))
    for size in sizes:
        thread_id = f"writer{size}"
        await stub.CreateThread(pb.CreateThreadRequest(thread_id=thread_id))
        stop, latencies = asyncio.Event(), []
        reader = asyncio.create_task(_reads(stub, stop, latencies))
        await asyncio.sleep(0.2)
        started = time.perf_counter()
        await stub.AppendEntries(
            pb.AppendEntriesRequest(thread_id=thread_id, entries=_entries(size, "e", "u"))
        )
        elapsed = time.perf_counter() - started
        stop.set()
        await reader
        print(
            f"append of {size}: {elapsed * 1000:.0f} ms; the other thread's reads: {len(latencies)}, "
            f"slowest {max(latencies) * 1000:.0f} ms"
        )
    await channel.close()
    await running.stop(grace=0.5)


if __name__ == "__main__":
    asyncio.run(main([int(arg) for arg in sys.argv[1:]] or [10, 50, 100]))
