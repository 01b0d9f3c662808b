"""SQLite units of work that wait together commit together (store/batches.py): one COMMIT for the
batch, each unit in a savepoint of its own, a failing unit rolled back alone, a failing commit
failing the batch with nothing stored."""

from __future__ import annotations

import asyncio
import threading

import pytest
from sqlalchemy import event, text

from pioneer_grpc.store.batches import MAX_UNITS, answer_units
from pioneer_grpc.store.engine import create_engine
from pioneer_grpc.store.runner import TransactionRunner


@pytest.fixture
async def store(tmp_path):
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}")
    runner = TransactionRunner(engine)
    create = text("CREATE TABLE t (x INTEGER UNIQUE)")
    await runner.transact(lambda conn: conn.execute(create))
    commits: list[int] = []
    assert runner._sync is not None
    event.listen(runner._sync, "commit", lambda _conn: commits.append(1))
    yield runner, commits
    await runner.close()
    await engine.dispose()


def _insert(value: int):
    def work(conn):
        conn.execute(text("INSERT INTO t VALUES (:x)"), {"x": value})
        return value

    return work


async def _rows(runner: TransactionRunner) -> list[int]:
    return await runner.read(lambda conn: [r[0] for r in conn.execute(text("SELECT x FROM t ORDER BY x"))])


async def _queued_behind_a_held_unit(runner: TransactionRunner, units):
    """Runs one unit that holds the thread until every unit of `units` waits, then lets them run:
    they are one batch."""
    started, release = threading.Event(), threading.Event()

    def hold(conn):
        started.set()
        release.wait(30)
        return "held"

    held = asyncio.ensure_future(runner.transact(hold))
    await asyncio.to_thread(started.wait, 30)
    waiting = [asyncio.ensure_future(unit()) for unit in units]
    await asyncio.sleep(0)  # each submitted to the queue
    release.set()
    return await held, await asyncio.gather(*waiting, return_exceptions=True)


async def test_units_waiting_together_commit_once(store):
    runner, commits = store
    commits.clear()
    _, answers = await _queued_behind_a_held_unit(
        runner, [lambda v=v: runner.transact(_insert(v)) for v in range(10)]
    )
    assert [a for a, _ in answers] == list(range(10))
    assert await _rows(runner) == list(range(10))
    assert len(commits) == 2  # the held unit's, then the ten's


async def test_a_batch_wakes_its_callers_event_loop_once(store, monkeypatch):
    runner, _ = store
    loop = asyncio.get_running_loop()
    wakes: list[int] = []
    call_soon_threadsafe = loop.call_soon_threadsafe

    def counted(callback, *args, **kwargs):
        if callback is answer_units:  # the answers to units of work, not to_thread's
            wakes.append(len(args[0]))
        return call_soon_threadsafe(callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_soon_threadsafe", counted)
    _, answers = await _queued_behind_a_held_unit(
        runner, [lambda v=v: runner.transact(_insert(v)) for v in range(10)]
    )
    assert [a for a, _ in answers] == list(range(10))
    assert wakes == [1, 10]  # the held unit's answer, then the batch's ten in one call


async def test_a_batch_takes_at_most_max_units(store):
    runner, commits = store
    commits.clear()
    count = MAX_UNITS + 3
    _, answers = await _queued_behind_a_held_unit(
        runner, [lambda v=v: runner.transact(_insert(v)) for v in range(count)]
    )
    assert [a for a, _ in answers] == list(range(count))
    assert len(commits) == 3


async def test_a_failing_unit_is_rolled_back_alone(store):
    runner, commits = store

    def fails_after_writing(conn):
        conn.execute(text("INSERT INTO t VALUES (100)"))
        raise LookupError("refused")

    def refused_after_its_checks(conn):
        conn.execute(text("INSERT INTO t VALUES (200)"))
        raise ValueError("a round's version changed")

    commits.clear()
    _, answers = await _queued_behind_a_held_unit(
        runner,
        [
            lambda: runner.transact(_insert(1)),
            lambda: runner.transact(fails_after_writing),
            lambda: runner.transact(_insert(2)),
            lambda: runner.transact(refused_after_its_checks),
            lambda: runner.transact(_insert(1)),  # a unique violation: its statement fails
            lambda: runner.transact(_insert(4)),
        ],
    )
    assert answers[0] == (1, None)
    assert isinstance(answers[1], LookupError)
    assert answers[2] == (2, None)
    assert isinstance(answers[3], ValueError)
    assert "UNIQUE constraint failed: t.x" in str(answers[4]), repr(answers[4])
    assert answers[5] == (4, None)
    assert await _rows(runner) == [1, 2, 4]
    assert len(commits) == 2


async def test_a_failing_commit_fails_every_unit_of_the_batch_and_stores_nothing(store):
    runner, _ = store
    fail = {"on": False}

    def refuse(_conn):
        if fail["on"]:
            fail["on"] = False
            raise OSError("disk gone at commit")

    assert runner._sync is not None
    event.listen(runner._sync, "commit", refuse)

    def dooms_the_commit(conn):
        fail["on"] = True  # the next commit, this batch's, fails
        return _insert(6)(conn)

    held, answers = await _queued_behind_a_held_unit(
        runner,
        [
            lambda: runner.transact(dooms_the_commit),
            *[lambda v=v: runner.transact(_insert(v)) for v in (7, 8, 9)],
        ],
    )
    assert held == ("held", None)
    assert [type(a).__name__ for a in answers] == ["Unavailable"] * 4, answers
    assert await _rows(runner) == []
    # The thread goes on: the next unit commits.
    assert (await runner.transact(_insert(5)))[0] == 5
    assert await _rows(runner) == [5]
