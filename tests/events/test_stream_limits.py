"""A slow observer is ended with RESOURCE_EXHAUSTED and resumes without loss; shutdown ends streams."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from datetime import UTC, datetime

import grpc
import pytest

from pioneer_grpc.config import Config
from pioneer_grpc.events.hub import ManifestHub, Subscription, SubscriptionOverflow
from pioneer_grpc.server.app import start_server
from pioneer_grpc.service.observe import record_manifest
from pioneer_grpc.store.manifests import EVENTS
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from pioneer_grpc.v1 import manifest_service_pb2_grpc as service_grpc
from tests.events.helpers import Observer, eventually, numbered_manifest

# Large enough that the transport's buffers fill after a few dozen events.
PADDING = "x" * 65536


def padded_manifest(n: int):
    manifest = numbered_manifest(n)
    manifest.diagnostics.add(code="padding", message=PADDING)
    return manifest


async def test_a_full_subscription_overflows_instead_of_growing() -> None:
    subscription = Subscription("", capacity=2)
    for n in range(1, 4):
        subscription.offer(service_pb2.WatchManifestsResponse(event=service_pb2.ManifestEvent(event_id=n)))
    assert subscription.overflowed
    assert subscription.pending == 2
    with pytest.raises(SubscriptionOverflow):
        await subscription.next(0.1)


async def test_an_observer_that_does_not_read_is_ended_and_resumes_without_loss(server_factory) -> None:
    handle = await server_factory(watch_queue_size=2, heartbeat_seconds=0)
    stub = service_grpc.ManifestServiceStub(handle.channel())
    stalled = stub.WatchManifests(service_pb2.WatchManifestsRequest())
    assert (await stalled.read()).HasField("heartbeat")

    produced = []
    for n in range(400):
        produced.append(await record_manifest(handle.ctx, "t", f"turn-{n}", padded_manifest(n)))
        if handle.ctx.hub.observer_count == 0:
            break
    assert handle.ctx.hub.observer_count == 0, "the stalled observer never overflowed"
    produced += [await record_manifest(handle.ctx, "t", f"later-{n}", padded_manifest(n)) for n in range(3)]

    received = []
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        while (response := await stalled.read()) is not grpc.aio.EOF:
            received.append(response.event.event_id)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert caught.value.details() == (
        f"observer fell more than 2 events behind; reconnect with after_event_id={received[-1]} "
        "to resume without loss"
    )
    assert received == produced[: len(received)]
    assert len(received) < len(produced)

    resume = service_pb2.WatchManifestsRequest(after_event_id=received[-1])
    resumed = Observer(handle.channel(), resume).start()
    await resumed.wait_live()
    assert received + resumed.event_ids == produced
    await resumed.cancel()


async def test_shutdown_ends_open_streams_promptly_and_quietly(database_url, tmp_path, caplog) -> None:
    caplog.set_level(logging.WARNING)
    config = replace(
        Config(listen="127.0.0.1:0", home=tmp_path / "home"), database_url=database_url, heartbeat_seconds=0.2
    )
    running = await start_server(config)
    channel = grpc.aio.insecure_channel(running.address)
    try:
        requests = [service_pb2.WatchManifestsRequest(thread_id=f"t{n % 2}") for n in range(5)]
        observers = [Observer(channel, request).start() for request in requests]
        for observer in observers:
            await observer.wait_live()
        await record_manifest(running.ctx, "t0", "turn-1", numbered_manifest(1))
        await observers[0].wait_for_count(1)

        started = asyncio.get_running_loop().time()
        # A long grace: open streams must still end at once, not when it runs out.
        await running.stop(grace=30)
        for observer in observers:
            await observer.ended(within=5)
        elapsed = asyncio.get_running_loop().time() - started
    finally:
        await channel.close()

    assert elapsed < 2.5
    for observer in observers:
        # UNAVAILABLE is what a resuming client (`pioneer-grpc watch`) reconnects on.
        assert observer.error is not None
        assert observer.error.code() == grpc.StatusCode.UNAVAILABLE
    assert running.ctx.hub.observer_count == 0
    leftover = [t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("manifest-")]
    assert leftover == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info] == []


async def test_cancelling_observers_leaves_no_subscription_and_logs_nothing(server, caplog) -> None:
    caplog.set_level(logging.WARNING)
    observers = [Observer(server.channel(), service_pb2.WatchManifestsRequest()).start() for _ in range(10)]
    for observer in observers:
        await observer.wait_live()
    await asyncio.gather(*(o.cancel() for o in observers))
    await eventually(lambda: server.ctx.hub.observer_count == 0, within=5)
    await record_manifest(server.ctx, "t", "turn-1", numbered_manifest(1))
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info] == []


async def test_streams_cancelled_mid_backlog_are_finished_before_the_server_stops(tmp_path) -> None:
    running = await start_server(Config(listen="127.0.0.1:0", home=tmp_path / "home", grace_seconds=0.2))
    payload = numbered_manifest(0).SerializeToString()
    async with running.ctx.store.engine.begin() as conn:
        await conn.execute(
            EVENTS.insert(),
            [
                {
                    "thread_id": f"t{n % 2}",
                    "turn_id": f"turn-{n}",
                    "manifest_pb": payload,
                    "created_at": datetime.now(UTC),
                }
                for n in range(4)
            ],
        )
    channels = [grpc.aio.insecure_channel(running.address) for _ in range(30)]
    calls = [
        service_grpc.ManifestServiceStub(channel).WatchManifests(
            service_pb2.WatchManifestsRequest(thread_id=f"t{n % 2}")
        )
        for n, channel in enumerate(channels)
    ]
    for call in calls:
        for _ in range(2):
            assert (await call.read()).HasField("event")
    # Abandoned while their servers are between (or inside) backlog reads.
    for call in calls:
        call.cancel()
    for channel in channels:
        await channel.close()
    await running.stop()
    leftover = [t.get_name() for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert leftover == []


async def test_hub_close_waits_for_a_cancelled_stream_that_is_still_finishing(server) -> None:
    hub = ManifestHub(server.ctx.store.manifests)
    await hub.start()
    finished = asyncio.Event()
    started = asyncio.Event()

    async def stream() -> None:
        hub.stream_started()
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            # Like a database read that must return before the connection can go back.
            await asyncio.shield(asyncio.sleep(0.3))
            finished.set()

    task = asyncio.create_task(stream())
    await started.wait()
    task.cancel()
    await hub.close()
    assert finished.is_set()
    assert task.done()
