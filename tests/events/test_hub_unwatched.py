"""With nobody watching, a hub learns how far events go without reading them; a later watcher misses nothing.

Another worker's or replica's commits reach a hub as pokes (a NOTIFY's id, or a
poll). Reading and decoding every such event for no observer cost each worker
CPU for every round of the others.
"""

from __future__ import annotations

from typing import Any

from pioneer_grpc.events.hub import ManifestHub
from pioneer_grpc.service.observe import record_manifest
from tests.events.helpers import eventually, numbered_manifest


async def test_an_unwatched_hub_reads_no_rows_and_a_later_subscriber_gets_what_follows(
    server, monkeypatch
) -> None:
    reads: list[int] = []
    manifests = server.ctx.store.manifests
    original = manifests.events_after

    async def counted(after_id: int, **kwargs: Any) -> Any:
        reads.append(after_id)
        return await original(after_id, **kwargs)

    monkeypatch.setattr(manifests, "events_after", counted)
    # A hub of its own: the server's rounds do not publish to it, as another worker's would not.
    hub = ManifestHub(manifests, poll_seconds=0.05)
    await hub.start()

    async def record(thread_id: str, turn_id: str, manifest: Any) -> int:
        return await record_manifest(server.ctx, thread_id, turn_id, manifest)

    try:
        named = [await record("t", f"turn-{i}", numbered_manifest(i)) for i in range(3)]
        hub.poke(named[-1])  # a NOTIFY naming the newest
        await eventually(lambda: hub.last_event_id == named[-1])
        polled = await record("t", "turn-3", numbered_manifest(3))  # only the poll finds it
        await eventually(lambda: hub.last_event_id == polled)
        assert reads == []

        subscription = hub.subscribe("", capacity=10)
        watched = await record("t", "turn-4", numbered_manifest(4))
        hub.poke(watched)
        delivered = await subscription.next(wait_seconds=10)
        assert delivered is not None
        assert delivered.event.event_id == watched
        assert reads
        assert reads[0] == polled
    finally:
        await hub.close()
