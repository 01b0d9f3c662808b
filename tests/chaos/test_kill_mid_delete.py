"""kill -9 of a real server in the middle of DeleteThread leaves the thread whole: the delete is one
transaction, so the database rolls back what it had deleted (on SQLite the uncommitted WAL frames
are ignored, on PostgreSQL the backend aborts with its client gone).

The point of the kill is exact, not timed: the server runs from a wrapper that makes the delete's
statement for `turns` (the last tables but one, after the entries, summaries, events and kept rounds
are deleted in the same transaction) print a line and block; the test kills the process on that line.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import grpc

from pioneer_grpc.models.registry import packaged_registry
from pioneer_grpc.store.engine import create_engine
from pioneer_grpc.store.sql import open_store
from pioneer_grpc.v1 import history_service_pb2, history_service_pb2_grpc
from tests.chaos.test_crash_and_startup import _wait_serving
from tests.store.test_delete_thread import _everything, _rows
from tests.support import free_port

MID_DELETE = "MID-DELETE-7f3a"

WRAPPER = f"""
import sys, threading
from pioneer_grpc.store import lifecycle


class StopAtTurns(dict):
    def values(self):
        for table, statement in self.items():
            if table == "turns":
                print({MID_DELETE!r}, flush=True)
                threading.Event().wait()
            yield statement


lifecycle._DELETES = StopAtTurns(lifecycle._DELETES)
from pioneer_grpc.cli import main

sys.exit(main())
"""


def _serve_until_mid_delete(tmp_path: Path, database_url: str, port: int) -> subprocess.Popen[str]:
    wrapper = tmp_path / "serve_until_mid_delete.py"
    wrapper.write_text(WRAPPER)
    command = [sys.executable, str(wrapper), "serve", "--home", str(tmp_path / "home")]
    command += ["--listen", f"127.0.0.1:{port}", "--database-url", database_url, "--log-level", "WARNING"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


async def _rows_now(database_url: str, thread_id: str) -> dict[str, int]:
    store = open_store(create_engine(database_url), packaged_registry().tokenizer_of)
    try:
        return await _rows(store, thread_id)
    finally:
        await store.close()


async def test_kill_9_mid_delete_leaves_the_thread_whole(database_url: str, tmp_path: Path) -> None:
    store = open_store(create_engine(database_url), packaged_registry().tokenizer_of)
    try:
        await _everything(store, "doomed")
    finally:
        await store.close()
    before = await _rows_now(database_url, "doomed")
    assert all(before.values()), before
    port = free_port()
    proc = _serve_until_mid_delete(tmp_path, database_url, port)
    try:
        await _wait_serving(f"127.0.0.1:{port}", proc)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = history_service_pb2_grpc.HistoryServiceStub(channel)
            deleting = asyncio.ensure_future(
                stub.DeleteThread(history_service_pb2.DeleteThreadRequest(thread_id="doomed"), timeout=60)
            )
            assert proc.stdout is not None
            while (line := await asyncio.to_thread(proc.stdout.readline)) and MID_DELETE not in line:
                pass
            assert MID_DELETE in line, proc.stderr.read() if proc.stderr else ""
            proc.kill()
            await asyncio.to_thread(proc.wait, 30)
            try:
                await deleting
            except grpc.aio.AioRpcError as error:
                assert error.code() == grpc.StatusCode.UNAVAILABLE
            else:
                raise AssertionError("the delete answered though its server was killed mid-way")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert await _rows_now(database_url, "doomed") == before
    # The thread is as it was: a server deletes it whole.
    store = open_store(create_engine(database_url), packaged_registry().tokenizer_of)
    try:
        assert await store.threads.delete("doomed") is not None
        assert set((await _rows(store, "doomed")).values()) == {0}
    finally:
        await store.close()
