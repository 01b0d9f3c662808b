"""Retention on every store: which threads are expired at a given moment (the sweeper's clock,
never the wall's), a conditional delete, the bytes a delete removed, and a delete by etag."""

from __future__ import annotations

from datetime import UTC, timedelta

import pytest

from pioneer_grpc import reasons
from pioneer_grpc.errors import Aborted, NotFound
from pioneer_grpc.store.port import Expiry, Store
from tests.store.contract.rows import batch, config, user

DAY = timedelta(days=1)


def _ids(found: list[tuple[str, str]]) -> list[str]:
    assert {tenant for tenant, _ in found} <= {"default"}
    return [thread_id for _, thread_id in found]


async def _updated(store: Store, thread_id: str) -> Expiry:
    """An expiry one microsecond after the thread's last write plus its 30 days: it is expired then,
    and written once more it is not."""
    moment = (await store.threads.get(thread_id)).update_time.ToDatetime(tzinfo=UTC)
    return Expiry(moment + 30 * DAY + timedelta(microseconds=1), 30)


async def test_expired_threads_are_found_by_their_own_retention_or_the_servers(store: Store) -> None:
    for thread_id in ("a", "b", "c"):
        await store.threads.create(thread_id, config())
    await store.threads.create("forever", config(retention_days=0))
    await store.threads.create("ten", config(retention_days=10))
    await store.threads.create("ninety", config(retention_days=90))
    start = await _updated(store, "ninety")
    # Eleven days on: only the thread kept for ten.
    assert _ids(await store.retention.expired(Expiry(start.moment - 19 * DAY, 30), 100)) == ["ten"]
    # A month on: the server's thirty days too, oldest write first, then the thread's own.
    month = Expiry(start.moment + DAY, 30)
    assert _ids(await store.retention.expired(month, 100)) == ["a", "b", "c", "ten"]
    assert _ids(await store.retention.expired(month, 2)) == ["a", "b"]
    # The server keeping threads forever: only the threads' own retention counts.
    assert _ids(await store.retention.expired(Expiry(start.moment + 100 * DAY, 0), 100)) == ["ten", "ninety"]
    # A hundred years on, the thread kept forever still is.
    assert "forever" not in _ids(await store.retention.expired(Expiry(start.moment + 36_600 * DAY, 30), 100))


async def test_a_thread_written_since_it_was_listed_is_not_deleted(store: Store) -> None:
    await store.threads.create("t", config())
    await store.entries.append(batch("t", user("q1", "u1")))
    expiry = await _updated(store, "t")
    assert _ids(await store.retention.expired(expiry, 10)) == ["t"]
    await store.entries.append(batch("t", user("q2", "u1")))
    assert await store.threads.delete("t", expiry=expiry) is None
    assert (await store.threads.get("t")).entry_count == 2
    assert _ids(await store.retention.expired(expiry, 10)) == []
    later = await _updated(store, "t")
    assert await store.threads.delete("t", expiry=later) is not None
    with pytest.raises(NotFound):
        await store.threads.get("t")


async def test_a_delete_says_how_many_bytes_it_removed(store: Store) -> None:
    await store.threads.create("small", config())
    await store.threads.create("large", config())
    await store.entries.append(batch("small", user("q1", "u1", "x")))
    await store.entries.append(batch("large", user("q1", "u1", "x" * 1000 + "é")))
    small = await store.threads.delete("small")
    large = await store.threads.delete("large")
    assert small is not None and large is not None
    assert small.bytes > 0
    assert large.bytes - small.bytes == 999 + len("é".encode())


async def test_a_stale_etag_deletes_nothing(store: Store) -> None:
    created = await store.threads.create("t", config())
    assert created.etag and (await store.threads.get("t")).etag == created.etag
    await store.entries.append(batch("t", user("q1", "u1")))
    appended = await store.threads.get("t")
    assert appended.etag != created.etag
    with pytest.raises(Aborted) as stale:
        await store.threads.delete("t", etag=created.etag)
    assert stale.value.reason == reasons.ETAG_MISMATCH
    assert (await store.threads.get("t")).entry_count == 1
    listed, _ = await store.listing.threads(None, 10)
    assert [thread.etag for thread in listed] == [appended.etag]
    assert await store.threads.delete("t", etag=appended.etag) is not None
    assert await store.threads.delete("t", etag=appended.etag) is None


async def test_one_sweeper_at_a_time(store: Store) -> None:
    async with store.retention.sweep_lock() as first:
        async with store.retention.sweep_lock() as second:
            assert (first, second) == (True, False)
    async with store.retention.sweep_lock() as again:
        assert again


async def test_expired_threads_of_every_tenant_are_found_and_each_deleted_in_its_own(store: Store) -> None:
    acme = store.of_tenant("acme")
    await store.threads.create("t", config())
    await acme.threads.create("t", config())
    expiry = await _updated(acme, "t")
    assert sorted(await store.retention.expired(expiry, 10)) == [("acme", "t"), ("default", "t")]
    assert await acme.threads.delete("t", expiry=expiry) is not None
    assert (await store.threads.get("t")).thread_id == "t"
    assert await store.retention.expired(expiry, 10) == [("default", "t")]
