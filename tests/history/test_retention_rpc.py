"""Retention on a real server, SQLite and PostgreSQL: the sweeper deletes expired threads (its clock
given by the test), counts them and their bytes in the metrics; DeleteThread by etag; two servers on
one PostgreSQL database sweep once between them."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import grpc

from pioneer_grpc import reasons
from pioneer_grpc.v1 import history_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb
from tests.builders import USER, entry
from tests.conftest import ServerFactory, ServerHandle
from tests.support import failure

MODEL = "claude-sonnet-4-5"


async def _threads(server: ServerHandle, ids: list[str], **config: int) -> history_pb2.Thread:
    client = await server.client()
    thread = history_pb2.Thread()
    for thread_id in ids:
        await client.create_thread(
            thread_id=thread_id, config=history_pb2.ThreadConfig(model=MODEL, **config)
        )
        await client.append_entries(thread_id=thread_id, entries=[entry("q1", "u1", USER, "question " * 50)])
        thread = (await client.get_thread(thread_id=thread_id)).thread
    return thread


def _month_after(thread: history_pb2.Thread) -> datetime:
    return thread.update_time.ToDatetime(tzinfo=UTC) + timedelta(days=30, microseconds=1)


async def test_expired_threads_are_swept_and_counted(
    database_url: str, server_factory: ServerFactory
) -> None:
    server = await server_factory(
        database_url=database_url, retention_days=30, retention_sweep_seconds=0, metrics_listen="127.0.0.1:0"
    )
    await _threads(server, ["kept"], retention_days=0)
    newest = await _threads(server, [f"old{n}" for n in range(3)])
    assert server.running.sweeper is not None
    swept = await server.running.sweeper.sweep(_month_after(newest))
    assert (swept.ran, swept.threads) == (True, 3)
    client = await server.client()
    for n in range(3):
        gone = await failure(client.get_thread(thread_id=f"old{n}"))
        assert (gone.code, gone.reason) == (grpc.StatusCode.NOT_FOUND, reasons.THREAD_NOT_FOUND)
    assert (await client.get_thread(thread_id="kept")).thread.entry_count == 1
    registry = server.ctx.telemetry.metrics.registry
    assert registry.get_sample_value("pioneer_retention_deleted_threads_total") == 3
    assert registry.get_sample_value("pioneer_retention_deleted_bytes_total") == swept.bytes
    assert swept.bytes > 3 * len("question " * 50)


async def test_delete_thread_by_etag_over_rpc(database_url: str, server_factory: ServerFactory) -> None:
    server = await server_factory(database_url=database_url)
    read = await _threads(server, ["t"])
    client = await server.client()
    await client.append_entries(thread_id="t", entries=[entry("q2", "u1", USER, "more")])
    stale = await failure(client.delete_thread(pb.DeleteThreadRequest(thread_id="t", etag=read.etag)))
    assert (stale.code, stale.reason) == (grpc.StatusCode.ABORTED, reasons.ETAG_MISMATCH)
    assert (await client.get_thread(thread_id="t")).thread.entry_count == 2
    fresh = (await client.get_thread(thread_id="t")).thread
    listed = (await client.list_threads()).threads
    assert [thread.etag for thread in listed] == [fresh.etag]
    deleted = await client.delete_thread(pb.DeleteThreadRequest(thread_id="t", etag=fresh.etag))
    assert deleted.deleted


async def test_two_servers_on_one_postgres_database_sweep_once(
    postgres_url: str, server_factory: ServerFactory
) -> None:
    one = await server_factory(
        database_url=postgres_url, retention_days=30, retention_sweep_seconds=0, metrics_listen="127.0.0.1:0"
    )
    two = await server_factory(
        database_url=postgres_url, retention_days=30, retention_sweep_seconds=0, metrics_listen="127.0.0.1:0"
    )
    newest = await _threads(one, [f"old{n}" for n in range(30)])
    assert one.running.sweeper is not None and two.running.sweeper is not None
    moment = _month_after(newest)
    first, second = await asyncio.gather(one.running.sweeper.sweep(moment), two.running.sweeper.sweep(moment))
    assert sorted([first.ran, second.ran]) == [False, True]
    assert first.threads + second.threads == 30
    counted = [
        server.ctx.telemetry.metrics.registry.get_sample_value("pioneer_retention_deleted_threads_total")
        for server in (one, two)
    ]
    assert sorted(counted) == [0, 30]
    assert (await (await two.client()).list_threads()).threads == []
