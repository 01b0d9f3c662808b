"""Retention and DeleteThread's etag as use cases: a sweep deletes what expired, through the one
delete path (watchers ended, kept answers forgotten), batch by batch, one log line each."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from pioneer_grpc import reasons
from pioneer_grpc.errors import Aborted, InvalidArgument, NotFound
from pioneer_grpc.service import history, lifecycle, retention
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.history_load import load_history
from pioneer_grpc.store.port import Expiry
from pioneer_grpc.v1 import history_pb2
from tests.store.contract.rows import answer, user

MODEL = "claude-sonnet-4-5"


async def _thread(ctx: ServiceContext, thread_id: str, **config: int) -> history_pb2.Thread:
    await history.create_thread(ctx, thread_id, history_pb2.ThreadConfig(model=MODEL, **config))
    await history.complete_turn(ctx, thread_id, "s1", [user("q1", "", "Q"), answer("a1", "", "A")])
    return await history.get_thread(ctx, thread_id)


def _after(thread: history_pb2.Thread, days: int) -> datetime:
    return thread.update_time.ToDatetime(tzinfo=UTC) + timedelta(days=days, microseconds=1)


async def test_a_sweep_deletes_expired_threads_in_batches_through_the_delete_path(
    ctx: ServiceContext, caplog: pytest.LogCaptureFixture
) -> None:
    for n in range(5):
        await _thread(ctx, f"old{n}")
    kept = await _thread(ctx, "kept", retention_days=0)
    await _thread(ctx, "longer", retention_days=60)
    await load_history(ctx, "old0")  # a kept answer of this server, to be forgotten
    assert len(ctx.load_cache) == 1
    watching = ctx.hub.subscribe("old0", capacity=10)
    caplog.set_level(logging.INFO, logger="pioneer_grpc.service.retention")
    swept = await retention.sweep(ctx, Expiry(_after(kept, 30), 30), batch=2, pause_seconds=0)
    assert (swept.ran, swept.threads, swept.batches) == (True, 5, 3)
    assert swept.bytes > 0
    lines = [r.getMessage() for r in caplog.records if r.name == "pioneer_grpc.service.retention"]
    assert [line.split(" threads ")[0] for line in lines] == ["retention: deleted 2"] * 2 + [
        "retention: deleted 1"
    ]
    final = await watching.next(1.0)
    assert final is not None and final.event.thread_deleted
    for n in range(5):
        with pytest.raises(NotFound):
            await history.get_thread(ctx, f"old{n}")
    assert len(ctx.load_cache) == 0
    assert {(await history.get_thread(ctx, t)).thread_id for t in ("kept", "longer")} == {"kept", "longer"}
    # Nothing left to delete: a second sweep deletes nothing and says nothing.
    caplog.clear()
    again = await retention.sweep(ctx, Expiry(_after(kept, 30), 30), batch=2, pause_seconds=0)
    assert (again.ran, again.threads) == (True, 0)
    assert not [r for r in caplog.records if r.name == "pioneer_grpc.service.retention"]


async def test_a_sweep_skips_its_turn_while_another_sweeper_holds_the_lock(ctx: ServiceContext) -> None:
    thread = await _thread(ctx, "old")
    async with ctx.store.retention.sweep_lock() as held:
        assert held
        skipped = await retention.sweep(ctx, Expiry(_after(thread, 30), 30))
    assert not skipped.ran
    assert (await history.get_thread(ctx, "old")).thread_id == "old"


async def test_delete_thread_by_etag(ctx: ServiceContext) -> None:
    read = await _thread(ctx, "t")
    await history.append_entries(ctx, "t", [user("q2", "s2", "Q2")])
    with pytest.raises(Aborted) as stale:
        await lifecycle.delete_thread(ctx, "t", etag=read.etag)
    assert stale.value.reason == reasons.ETAG_MISMATCH
    fresh = await history.get_thread(ctx, "t")
    assert fresh.etag != read.etag
    with pytest.raises(InvalidArgument):
        await lifecycle.delete_thread(ctx, "t", etag="x" * 201)
    assert await lifecycle.delete_thread(ctx, "t", etag=fresh.etag) is True
    assert await lifecycle.delete_thread(ctx, "t", allow_missing=True, etag=fresh.etag) is False


async def test_retention_days_is_a_setting_of_the_thread(ctx: ServiceContext) -> None:
    created = await _thread(ctx, "t", retention_days=7)
    assert created.config.retention_days == 7
    with pytest.raises(InvalidArgument) as refused:
        await history.create_thread(ctx, "u", history_pb2.ThreadConfig(model=MODEL, retention_days=36_501))
    assert "config.retention_days" in str(refused.value)
    updated = await history.update_thread(
        ctx, "t", history_pb2.ThreadConfig(retention_days=0), ["retention_days"]
    )
    assert updated.config.HasField("retention_days") and updated.config.retention_days == 0
    cleared = await history.update_thread(ctx, "t", history_pb2.ThreadConfig(), ["retention_days"])
    assert not cleared.config.HasField("retention_days")
