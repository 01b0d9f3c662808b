"""On PostgreSQL an event id that commits late must not be skipped by observers.

A trigger makes one insert sleep inside its transaction after its id was drawn.
Without serialised inserts a second, quick compile would take the next id and
commit first; the hub would read it, move past the sleeping id, and never
deliver it. With them, the quick compile waits, and observers see both in order.
"""

from __future__ import annotations

import asyncio

import asyncpg
from sqlalchemy import text

from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from tests.events.helpers import Observer, numbered_manifest

SLOW_INSERT = [
    """CREATE FUNCTION sleep_in_insert() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN PERFORM pg_sleep(1.0); RETURN NEW; END $$""",
    """CREATE TRIGGER sleep_in_insert AFTER INSERT ON manifest_events FOR EACH ROW
       WHEN (NEW.thread_id = 'slow') EXECUTE FUNCTION sleep_in_insert()""",
]


async def wait_until_an_insert_sleeps(url: str) -> None:
    probe = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        for _ in range(500):
            if await probe.fetchval("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'"):
                return
            await asyncio.sleep(0.01)
        raise AssertionError("the slow insert never started")
    finally:
        await probe.close()


async def test_a_late_commit_of_a_smaller_id_still_reaches_observers(postgres_url, server_factory) -> None:
    handle = await server_factory(database_url=postgres_url)
    async with handle.ctx.engine.begin() as conn:
        for statement in SLOW_INSERT:
            await conn.execute(text(statement))
    observer = Observer(handle.channel(), service_pb2.WatchManifestsRequest()).start()
    await observer.wait_live()

    slow = asyncio.create_task(handle.ctx.manifests.record("slow", "turn-1", numbered_manifest(1)))
    await wait_until_an_insert_sleeps(postgres_url)
    fast_id = await handle.ctx.manifests.record("fast", "turn-1", numbered_manifest(2))
    slow_id = await slow

    assert slow_id < fast_id
    assert await observer.wait_for_count(2, within=10) == [slow_id, fast_id]
    await asyncio.sleep(0.2)
    assert observer.event_ids == [slow_id, fast_id]
    await observer.cancel()
