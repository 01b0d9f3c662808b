"""`run_to_end`: the work always finishes; the caller sees its own cancellation, or the work's outcome."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest
from sqlalchemy import exc as sa_exc

from pioneer_grpc.errors import PioneerError
from pioneer_grpc.store import work as work_module
from pioneer_grpc.store.work import UnitFuture, drain, run_to_end


async def test_a_cancelled_caller_waits_for_the_work_then_sees_its_cancellation():
    started, release, finished = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def work() -> str:
        started.set()
        await release.wait()
        finished.set()
        return "done"

    caller = asyncio.create_task(run_to_end(work()))
    await started.wait()
    caller.cancel()
    # One loop step: the cancellation the caller was sent is delivered before this task resumes.
    await asyncio.sleep(0)
    assert not caller.done(), "the cancelled caller returned while its work was still running"
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert finished.is_set(), "the caller returned before its work finished"


async def test_a_caller_cancelled_twice_still_waits_for_the_work():
    started, release, finished = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def work() -> None:
        started.set()
        await release.wait()
        finished.set()

    caller = asyncio.create_task(run_to_end(work()))
    await started.wait()
    for _ in range(2):
        caller.cancel()
        await asyncio.sleep(0)  # the cancellation is delivered (see above)
        assert not caller.done()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert finished.is_set()


async def test_a_caller_cancelled_as_the_work_finishes_still_sees_its_cancellation():
    async def work() -> str:
        return "done"

    async def caller() -> str:
        return await run_to_end(work())

    task = asyncio.create_task(caller())
    # One step: the caller starts the work. Two: the work completes, and the cancel
    # arrives before the caller has seen it done.
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_the_works_result_and_failures_reach_the_caller():
    async def ok() -> int:
        await asyncio.sleep(0)
        return 7

    async def bug() -> None:
        raise KeyError("a bug stays itself")

    async def database() -> None:
        raise sa_exc.OperationalError("INSERT", {}, sqlite3.OperationalError("database or disk is full"))

    assert await run_to_end(ok()) == 7
    with pytest.raises(KeyError):
        await run_to_end(bug())
    with pytest.raises(PioneerError) as info:
        await run_to_end(database())
    assert info.value.reason == "DISK_FULL"


async def test_work_cancelled_by_itself_is_a_cancellation_of_the_caller():
    async def work() -> None:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await run_to_end(work())


async def test_past_its_bound_the_caller_is_answered_while_the_work_runs_on_tracked(monkeypatch):
    monkeypatch.setattr(work_module, "UNIT_SECONDS", 0.05)
    release, finished = asyncio.Event(), asyncio.Event()

    async def slow() -> str:
        await release.wait()
        finished.set()
        return "late"

    with pytest.raises(PioneerError) as info:
        await run_to_end(slow())
    assert info.value.reason == "DATABASE_TIMEOUT"
    assert not finished.is_set()
    assert await drain(0.01) == 1  # still running, and waited for before an engine goes
    release.set()
    assert await drain(30) == 0
    assert finished.is_set()


async def test_a_unit_future_is_awaited_as_it_is_and_a_cancelled_caller_waits_for_its_end():
    loop = asyncio.get_running_loop()
    unit: UnitFuture[str] = UnitFuture(loop=loop)
    caller = asyncio.create_task(run_to_end(unit))
    await asyncio.sleep(0)  # the caller waits on the unit
    caller.cancel()
    await asyncio.sleep(0)
    assert not caller.done() and not unit.done(), "cancelling the caller reached the unit"
    unit.end(None, KeyError("its own failure, which nobody hears now"))
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert unit.exception() is not None


async def test_a_unit_future_answered_at_its_bound_ends_its_stand_in_when_it_ends(monkeypatch):
    monkeypatch.setattr(work_module, "UNIT_SECONDS", 0.05)
    unit: UnitFuture[str] = UnitFuture(loop=asyncio.get_running_loop())
    with pytest.raises(PioneerError) as info:
        await run_to_end(unit)
    assert info.value.reason == "DATABASE_TIMEOUT"
    assert await drain(0.01) == 1
    unit.end("late", None)  # the thread answers at last
    assert await drain(30) == 0
