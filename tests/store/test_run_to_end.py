"""`run_to_end`: the work always finishes; the caller sees its own cancellation, or the work's outcome."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest
from sqlalchemy import exc as sa_exc

from pioneer_grpc.errors import PioneerError
from pioneer_grpc.store.work import run_to_end


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
