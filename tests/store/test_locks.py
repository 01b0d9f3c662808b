"""The compression lock: in-process queueing, and across engines on PostgreSQL."""

from __future__ import annotations

import asyncio

import pytest

from pioneer_grpc.store.engine import create_engine
from pioneer_grpc.store.locks import LOCAL_LOCKS, advisory_key, compression_lock
from tests.conftest import fresh_postgres_database


def test_advisory_key_is_stable_and_signed_64_bit():
    assert advisory_key("thread-1") == advisory_key("thread-1")
    assert advisory_key("thread-1") != advisory_key("thread-2")
    assert -(2**63) <= advisory_key("thread-1") < 2**63


async def test_local_lock_queues_holders_and_forgets_idle_keys(tmp_path):
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'l.db'}")
    order: list[str] = []
    a_in, b_asks = asyncio.Event(), asyncio.Event()

    async def hold(name: str, entered: asyncio.Event | None, leave_when: asyncio.Event | None) -> None:
        async with compression_lock(engine, "t", 5) as held:
            assert held
            order.append(f"{name} in")
            if entered is not None:
                entered.set()
            if leave_when is not None:
                await leave_when.wait()
            order.append(f"{name} out")

    async def b() -> None:
        await a_in.wait()
        # Set before b asks for the lock, but a resumes only once b is parked on it.
        b_asks.set()
        await hold("b", None, None)

    await asyncio.gather(hold("a", a_in, b_asks), b())
    assert order == ["a in", "a out", "b in", "b out"]
    assert len(LOCAL_LOCKS) == 0
    await engine.dispose()


async def test_local_wait_is_bounded(tmp_path):
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'l.db'}")
    async with compression_lock(engine, "t", 5) as first:
        assert first
        async with compression_lock(engine, "t", 0.1) as second:
            assert not second
    await engine.dispose()


@pytest.mark.postgres
async def test_postgres_lock_holds_across_engines():
    async with fresh_postgres_database() as url:
        one, two = create_engine(url), create_engine(url)
        try:
            async with compression_lock(one, "t", 5) as held:
                assert held
                async with compression_lock(two, "t", 0.3) as other:
                    assert not other
                async with compression_lock(two, "other-thread", 0.3) as unrelated:
                    assert unrelated
            async with compression_lock(two, "t", 1) as after:
                assert after
        finally:
            await one.dispose()
            await two.dispose()


async def test_sqlite_lock_holds_across_processes(tmp_path):
    """Workers of `serve --workers N` share a SQLite file: one compresses a thread at a time."""
    import sys

    from pioneer_grpc.store.locks import FILE_LOCKS

    database = tmp_path / "l.db"
    engine = create_engine(f"sqlite+aiosqlite:///{database}")
    offset = advisory_key("t") & 0x7FFFFFFF
    holder = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import sys, fcntl, os\n"
        f"fd = os.open({str(database) + '.thread-locks'!r}, os.O_RDWR | os.O_CREAT)\n"
        f"fcntl.lockf(fd, fcntl.LOCK_EX, 1, {offset})\n"
        "print('held', flush=True)\n"
        "sys.stdin.readline()\n",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert holder.stdout is not None
    assert holder.stdin is not None
    assert await holder.stdout.readline() == b"held\n"
    async with compression_lock(engine, "t", 0.3) as held:
        assert not held
    async with compression_lock(engine, "another thread", 0.3) as held:
        assert held
    holder.stdin.write(b"done\n")
    await holder.wait()
    async with compression_lock(engine, "t", 5) as held:
        assert held
        assert not await asyncio.to_thread(_locked_elsewhere, str(database) + ".thread-locks", offset)
    assert FILE_LOCKS.try_lock(str(database) + ".thread-locks", offset)
    FILE_LOCKS.unlock(str(database) + ".thread-locks", offset)
    await engine.dispose()


def _locked_elsewhere(path: str, offset: int) -> bool:
    """Whether another process can take the byte: False while this process holds it."""
    import subprocess
    import sys

    code = (
        "import fcntl, os, sys\n"
        f"fd = os.open({path!r}, os.O_RDWR)\n"
        f"try:\n    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, {offset})\n"
        "except BlockingIOError:\n    sys.exit(1)\n"
    )
    return subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
