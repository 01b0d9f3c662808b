"""Start the hub and (on PostgreSQL) the listener as one unit."""

from __future__ import annotations

from dataclasses import dataclass

from pioneer_grpc.events.hub import ManifestHub
from pioneer_grpc.events.pg_listener import PgEventListener
from pioneer_grpc.store.port import Manifests


@dataclass
class ManifestEvents:
    hub: ManifestHub
    listener: PgEventListener | None

    async def close(self) -> None:
        if self.listener is not None:
            await self.listener.close()
        await self.hub.close()


async def start_manifest_events(
    manifests: Manifests, *, listen_dsn: str | None = None, poll_seconds: float | None = None
) -> ManifestEvents:
    """The hub reading the store's events; with `listen_dsn` (PostgreSQL), the listener that pokes it
    when any replica commits one. `poll_seconds`: how often the hub reads new events unprompted
    (default: its slow safety net)."""
    hub = (
        ManifestHub(manifests) if poll_seconds is None else ManifestHub(manifests, poll_seconds=poll_seconds)
    )
    await hub.start()
    listener = None
    if listen_dsn is not None:
        listener = PgEventListener(listen_dsn, hub.poke)
        try:
            await listener.start()
        except BaseException:
            await hub.close()
            raise
    return ManifestEvents(hub=hub, listener=listener)
