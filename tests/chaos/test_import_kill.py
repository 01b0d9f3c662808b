"""kill -9 of a real server mid-import leaves the thread whole or absent, never in part.

The import's stream (900 entries, 2 MB) is sent to a `pioneer-grpc serve` process, which is
killed at points from mid-stream to while it writes; a server started again on the same database
finds either nothing of the thread or all of it.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
from datetime import UTC, datetime, timedelta

import grpc

from pioneer_grpc.history.entries import content_hash
from pioneer_grpc.service.thread_export import export_lines
from pioneer_grpc.store.copy_port import CopiedEntry, CopiedTurn, ThreadCopy
from pioneer_grpc.v1 import history_pb2, history_service_pb2, history_service_pb2_grpc
from tests.chaos.test_crash_and_startup import _serve, _wait_serving
from tests.support import free_port

H = history_pb2
ENTRIES = 900
START = datetime(2026, 1, 1, tzinfo=UTC)


def _stream() -> bytes:
    turns, entries = [], []
    for t in range(ENTRIES // 3):
        turn_id = f"turn-{t}"
        turns.append(CopiedTurn(turn_id, H.TURN_STATUS_COMPLETED, START, START))
        for n in range(3):
            entry = H.ConversationEntry(
                entry_id=f"e{t}.{n}",
                turn_id=turn_id,
                role=H.ENTRY_ROLE_USER if n == 0 else H.ENTRY_ROLE_ASSISTANT,
                content=f"entry {t}.{n} " + "z" * 2_000,
                token_count=500,
                tokenizer="cl100k_base",
                completed=True,
            )
            entry.create_time.FromDatetime(START + timedelta(seconds=t))
            entries.append(CopiedEntry(entry, content_hash(entry), {}))
    config = H.ThreadConfig(max_context_tokens=200_000, response_reserve_tokens=8_000, model="gpt-4o")
    copy = ThreadCopy(config, START, START, "", turns, entries, [])
    return b"".join(export_lines("big", copy))


async def _import(address: str, thread_id: str, stream: bytes, sent: asyncio.Event, whole: bool) -> None:
    pieces = [stream[i : i + 256 * 1024] for i in range(0, len(stream), 256 * 1024)]
    if not whole:
        pieces = pieces[: len(pieces) // 2]

    async def requests():
        for i, piece in enumerate(pieces):
            yield history_service_pb2.ImportThreadRequest(thread_id=thread_id if i == 0 else "", chunk=piece)
        sent.set()
        if not whole:
            await asyncio.Event().wait()

    async with grpc.aio.insecure_channel(address) as channel:
        try:
            await history_service_pb2_grpc.HistoryServiceStub(channel).ImportThread(requests(), timeout=60)
        except grpc.aio.AioRpcError:
            pass


async def _entry_count(address: str, thread_id: str) -> int | None:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = history_service_pb2_grpc.HistoryServiceStub(channel)
        try:
            found = await stub.GetThread(
                history_service_pb2.GetThreadRequest(thread_id=thread_id), timeout=10
            )
        except grpc.aio.AioRpcError as error:
            assert error.code() == grpc.StatusCode.NOT_FOUND
            return None
        return int(found.thread.entry_count)


async def test_kill_9_mid_import_leaves_all_or_nothing(database_url, tmp_path):
    home = tmp_path / "home"
    url = "" if database_url.startswith("sqlite") else database_url
    stream = _stream()
    # (whole stream sent?, seconds after the last chunk was sent before the kill)
    kills = [(False, 0.0), (True, 0.0), (True, 0.1)]
    # Each server started again after a kill first shows what the kill left, then takes the next
    # import and is killed in turn; the last one takes an import whole.
    port = free_port()
    proc = _serve(home, url, port)
    try:
        await _wait_serving(f"127.0.0.1:{port}", proc)
        for n, (whole, delay) in enumerate(kills):
            sent = asyncio.Event()
            call = asyncio.create_task(_import(f"127.0.0.1:{port}", f"k{n}", stream, sent, whole))
            await asyncio.wait_for(sent.wait(), 60)
            await asyncio.sleep(delay)
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            await asyncio.wait_for(call, 30)
            port = free_port()
            proc = _serve(home, url, port)
            await _wait_serving(f"127.0.0.1:{port}", proc)
            count = await _entry_count(f"127.0.0.1:{port}", f"k{n}")
            assert count in (None, ENTRIES), (n, count)
            if not whole:
                assert count is None
        # The server started again takes the import whole.
        await _import(f"127.0.0.1:{port}", "after", stream, asyncio.Event(), True)
        assert await _entry_count(f"127.0.0.1:{port}", "after") == ENTRIES
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
