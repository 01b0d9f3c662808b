"""WatchManifests on one server: backlog then live, resume, filters, heartbeats, many observers."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import grpc
import pytest
from sqlalchemy import select

from pioneer_grpc.service.observe import record_manifest
from pioneer_grpc.store.manifests import EVENTS
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from tests.events.helpers import Observer, eventually, numbered_manifest


def watch(handle, **request: object) -> Observer:
    return Observer(handle.channel(), service_pb2.WatchManifestsRequest(**request)).start()


async def record(handle, count: int, thread_id: str = "t", start: int = 0) -> list[int]:
    return [
        await record_manifest(handle.ctx, thread_id, f"turn-{n}", numbered_manifest(n))
        for n in range(start, start + count)
    ]


async def test_backlog_then_live_in_id_order(pg_server) -> None:
    stored = await record(pg_server, 3)
    observer = watch(pg_server)
    await observer.wait_live()
    assert observer.event_ids == stored
    live = await record(pg_server, 3, start=3)
    assert await observer.wait_for_count(6) == stored + live
    await observer.cancel()


async def test_after_event_id_and_live_only_skip_what_the_observer_has(pg_server) -> None:
    stored = await record(pg_server, 4)
    resumed = watch(pg_server, after_event_id=stored[1])
    live_only = watch(pg_server, live_only=True, after_event_id=stored[0])
    await resumed.wait_live()
    await live_only.wait_live()
    assert resumed.event_ids == stored[2:]
    assert live_only.event_ids == []
    new = await record(pg_server, 2, start=4)
    assert await resumed.wait_for_count(4) == stored[2:] + new
    assert await live_only.wait_for_count(2) == new
    await resumed.cancel()
    await live_only.cancel()


async def test_thread_filter_and_heartbeats_carry_the_newest_id(server_factory) -> None:
    handle = await server_factory(heartbeat_seconds=0.2)
    mine = await record(handle, 2, thread_id="mine")
    observer = watch(handle, thread_id="mine")
    await observer.wait_live()
    others = await record(handle, 3, thread_id="other", start=2)
    more_mine = await record(handle, 1, thread_id="mine", start=5)
    assert await observer.wait_for_count(3) == mine + more_mine
    others += await record(handle, 1, thread_id="other", start=6)
    heartbeats_before = len(observer.heartbeats)
    await observer.wait_until(
        lambda o: len(o.heartbeats) > heartbeats_before and o.heartbeats[-1].last_event_id == others[-1],
        within=5,
    )
    assert observer.event_ids == mine + more_mine
    assert observer.heartbeats[-1].time.seconds > 0
    await observer.cancel()


async def test_reconnecting_with_the_last_id_receives_exactly_the_missed_events(pg_server) -> None:
    first = watch(pg_server)
    await first.wait_live()
    before = await record(pg_server, 5)
    assert await first.wait_for_count(5) == before
    await first.cancel()

    # The second watch starts once the first missed event exists, while more are being recorded.
    progress = watch(pg_server, after_event_id=first.event_ids[-1])
    producing = asyncio.create_task(record(pg_server, 10, start=5))
    await progress.wait_for_count(1)
    second = watch(pg_server, after_event_id=first.event_ids[-1])
    during = await producing
    assert await second.wait_for_count(10) == during
    after = await record(pg_server, 3, start=15)
    assert await second.wait_for_count(13) == during + after
    # Events arrive in order: once a last one has, no repeat of an earlier one is still on its way.
    last = await record(pg_server, 1, start=18)
    assert await second.wait_for_count(14) == during + after + last
    await progress.cancel()
    await second.cancel()


async def test_one_hundred_observers_each_receive_every_event_in_order(pg_server) -> None:
    observers = [watch(pg_server) for _ in range(100)]
    await asyncio.wait_for(asyncio.gather(*(o.wait_live() for o in observers)), 30)
    assert pg_server.ctx.hub.observer_count == 100
    produced = await record(pg_server, 20)
    received = await asyncio.wait_for(asyncio.gather(*(o.wait_for_count(20) for o in observers)), 30)
    assert all(ids == produced for ids in received)
    await asyncio.gather(*(o.cancel() for o in observers))


async def test_a_cancelled_observer_is_unsubscribed(server) -> None:
    observers = [watch(server) for _ in range(3)]
    for observer in observers:
        await observer.wait_live()
    assert server.ctx.hub.observer_count == 3
    for observer in observers:
        await observer.cancel()
    await eventually(lambda: server.ctx.hub.observer_count == 0, within=5)


async def test_negative_after_event_id_is_invalid(server) -> None:
    observer = watch(server, after_event_id=-1)
    await observer.ended()
    assert observer.error is not None
    assert observer.error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert observer.error.details() == "after_event_id: must not be negative"


@pytest.mark.parametrize("count", [1, 500, 501, 1001])
async def test_backlog_pages_are_seamless(server, count: int) -> None:
    # Rows written in one batch: the backlog read does not care how they got there.
    now = datetime.now(UTC)
    payload = numbered_manifest(0).SerializeToString()
    async with server.ctx.store.engine.begin() as conn:
        await conn.execute(
            EVENTS.insert(),
            [
                {"thread_id": "t", "turn_id": f"turn-{n}", "manifest_pb": payload, "created_at": now}
                for n in range(count)
            ],
        )
        stored = list((await conn.scalars(select(EVENTS.c.id).order_by(EVENTS.c.id))).all())
    observer = watch(server)
    await observer.wait_live(within=30)
    assert observer.event_ids == stored
    assert len(stored) == count
    await observer.cancel()
