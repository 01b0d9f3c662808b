"""A thread deleted by one server ends the watches of it another server serves: two servers on one
database, as two workers of `serve --workers 2` (SQLite: each reads the other's commits by polling)
or two replicas (PostgreSQL: the delete's NOTIFY wakes the other)."""

from __future__ import annotations

import asyncio

from pioneer_grpc.v1 import history_pb2
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from tests.builders import USER, entry
from tests.conftest import ServerFactory


async def test_a_watch_on_another_server_ends_when_the_thread_is_deleted(
    database_url: str, server_factory: ServerFactory
) -> None:
    workers = 1 if database_url.startswith("postgresql") else 2
    deleting = await server_factory(database_url=database_url, workers=workers)
    watching = await server_factory(database_url=database_url, workers=workers)
    writer = await deleting.client()
    for thread_id in ("t", "other"):
        await writer.create_thread(
            thread_id=thread_id, config=history_pb2.ThreadConfig(model="claude-sonnet-4-5")
        )
        await writer.append_entries(thread_id=thread_id, entries=[entry("q1", "u1", USER, "question")])
    observer = await watching.client()
    received: dict[str, list[service_pb2.WatchManifestsResponse]] = {"t": [], "other": []}
    live = {"t": asyncio.Event(), "other": asyncio.Event()}

    async def watch(thread_id: str) -> None:
        async for response in observer.watch_manifests(thread_id=thread_id, live_only=True):
            received[thread_id].append(response)
            live[thread_id].set()

    streams = {thread_id: asyncio.create_task(watch(thread_id)) for thread_id in received}
    # Live: the first heartbeat says the stream is past its catch-up, so the hub holds its subscription.
    await asyncio.wait_for(asyncio.gather(*(event.wait() for event in live.values())), 30)
    assert (await writer.delete_thread(thread_id="t")).deleted
    await asyncio.wait_for(streams["t"], 30)  # the stream ended by itself
    final = received["t"][-1]
    assert final.event.thread_deleted and final.event.thread_id == "t"
    assert not streams["other"].done()
    assert not any(response.event.thread_deleted for response in received["other"])
    streams["other"].cancel()
