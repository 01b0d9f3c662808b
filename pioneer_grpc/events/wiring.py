"""Start the recorder, the hub and (on PostgreSQL) the listener as one unit."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from pioneer_grpc.events.hub import ManifestHub
from pioneer_grpc.events.pg_listener import PgEventListener, asyncpg_dsn
from pioneer_grpc.events.recorder import ManifestRecorder
from pioneer_grpc.store.runner import TransactionRunner


@dataclass
class ManifestEvents:
    recorder: ManifestRecorder
    hub: ManifestHub
    listener: PgEventListener | None

    async def close(self) -> None:
        if self.listener is not None:
            await self.listener.close()
        await self.hub.close()


async def start_manifest_events(
    engine: AsyncEngine, runner: TransactionRunner, *, poll_seconds: float | None = None
) -> ManifestEvents:
    """`poll_seconds`: how often the hub reads new events unprompted (default: its slow safety net)."""
    hub = ManifestHub(engine) if poll_seconds is None else ManifestHub(engine, poll_seconds=poll_seconds)
    await hub.start()
    recorder = ManifestRecorder(runner, engine.dialect.name == "postgresql", on_committed=hub.publish)
    listener = None
    if engine.dialect.name == "postgresql":
        listener = PgEventListener(asyncpg_dsn(engine.url.render_as_string(hide_password=False)), hub.poke)
        try:
            await listener.start()
        except BaseException:
            await hub.close()
            raise
    return ManifestEvents(recorder=recorder, hub=hub, listener=listener)
