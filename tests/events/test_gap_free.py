"""On PostgreSQL an event id that commits late must not be skipped by observers.

A trigger makes one commit sleep after its event's id was drawn. Were ids not
drawn in commit order, a second, quick compile would take the next id and commit
first; the hub would read it, move past the sleeping id, and never deliver it.
As they are, the quick compile's commit waits, and observers see both in order.

And a transaction slow before its commit holds nobody up: ids are drawn at commit
(migration 0005), so a quick compile commits first, with the smaller id.
"""

from __future__ import annotations

import asyncio

import asyncpg
from sqlalchemy import text

from pioneer_grpc.service.observe import record_manifest
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from tests.events.helpers import Observer, numbered_manifest

SLEEP = """CREATE FUNCTION sleep_a_second() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN PERFORM pg_sleep(1.0); RETURN NULL; END $$"""
# Deferred triggers of one row fire in name order: this one after the numbering trigger.
SLOW_COMMIT = [
    SLEEP,
    """CREATE CONSTRAINT TRIGGER sleep_after_numbering AFTER INSERT ON manifest_events
       DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
       WHEN (NEW.thread_id = 'slow') EXECUTE FUNCTION sleep_a_second()""",
]
SLOW_INSERT = [
    SLEEP,
    """CREATE TRIGGER sleep_in_insert AFTER INSERT ON manifest_events FOR EACH ROW
       WHEN (NEW.thread_id = 'slow') EXECUTE FUNCTION sleep_a_second()""",
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


async def _server_with(statements: list[str], postgres_url, server_factory):
    handle = await server_factory(database_url=postgres_url)
    async with handle.ctx.store.engine.begin() as conn:
        for statement in statements:
            await conn.execute(text(statement))
    return handle


async def _slow_then_fast(handle, postgres_url) -> tuple[Observer, int, int, bool]:
    """An observer; a record that sleeps, and one made while it sleeps: (observer, slow id, fast id,
    whether the slow one was still pending when the fast one returned)."""
    observer = Observer(handle.channel(), service_pb2.WatchManifestsRequest()).start()
    await observer.wait_live()
    slow = asyncio.create_task(record_manifest(handle.ctx, "slow", "turn-1", numbered_manifest(1)))
    await wait_until_an_insert_sleeps(postgres_url)
    fast_id = await record_manifest(handle.ctx, "fast", "turn-1", numbered_manifest(2))
    pending = not slow.done()
    return observer, await slow, fast_id, pending


async def test_a_late_commit_of_a_smaller_id_still_reaches_observers(postgres_url, server_factory) -> None:
    handle = await _server_with(SLOW_COMMIT, postgres_url, server_factory)
    observer, slow_id, fast_id, _ = await _slow_then_fast(handle, postgres_url)

    assert slow_id < fast_id
    assert await observer.wait_for_count(2, within=10) == [slow_id, fast_id]
    # Events arrive in order: once a later one has, no repeat of the first two is still on its way.
    last_id = await record_manifest(handle.ctx, "fast", "turn-2", numbered_manifest(3))
    assert await observer.wait_for_count(3, within=10) == [slow_id, fast_id, last_id]
    await observer.cancel()


async def test_a_transaction_slow_before_its_commit_holds_up_no_other_event(
    postgres_url, server_factory
) -> None:
    handle = await _server_with(SLOW_INSERT, postgres_url, server_factory)
    observer, slow_id, fast_id, slow_was_pending = await _slow_then_fast(handle, postgres_url)

    assert slow_was_pending
    assert 0 < fast_id < slow_id
    assert await observer.wait_for_count(2, within=10) == [fast_id, slow_id]
    async with handle.ctx.store.engine.connect() as conn:
        pointers = dict((await conn.execute(text("SELECT thread_id, manifest_event_id FROM turns"))).all())
        stored = (await conn.execute(text("SELECT id FROM manifest_events ORDER BY id"))).scalars().all()
    assert pointers == {"slow": slow_id, "fast": fast_id}
    assert stored == [fast_id, slow_id]
    await observer.cancel()


async def wait_for_an_advisory_lock_wait(probe: asyncpg.Connection) -> None:
    for _ in range(500):
        if await probe.fetchval("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'advisory'"):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("no commit ever waited for the event lock")


async def test_an_event_of_the_previous_release_and_one_numbered_at_commit_keep_commit_order(
    postgres_url, server_factory
) -> None:
    """During an upgrade an older server draws ids at insert, under the same lock, held to its commit."""
    handle = await server_factory(database_url=postgres_url)
    observer = Observer(handle.channel(), service_pb2.WatchManifestsRequest()).start()
    await observer.wait_live()
    older = await asyncpg.connect(postgres_url.replace("postgresql+asyncpg", "postgresql"))
    try:
        async with older.transaction():
            await older.execute("SELECT pg_advisory_xact_lock(1346981710, 1296389716)")
            older_id = await older.fetchval(
                "INSERT INTO manifest_events (thread_id, turn_id, manifest_pb, created_at)"
                " VALUES ('older', 'turn-1', $1, now()) RETURNING id",
                numbered_manifest(1).SerializeToString(),
            )
            newer = asyncio.create_task(record_manifest(handle.ctx, "newer", "turn-1", numbered_manifest(2)))
            await wait_for_an_advisory_lock_wait(older)
            assert not newer.done()
        await older.execute("NOTIFY pioneer_manifest_events")
        newer_id = await newer
    finally:
        await older.close()
    assert 0 < older_id < newer_id
    assert await observer.wait_for_count(2, within=10) == [older_id, newer_id]
    await observer.cancel()
