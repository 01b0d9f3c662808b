"""SQLite units of work that wait together commit together (store/batches.py): one COMMIT for the
batch, each unit in a savepoint of its own, a failing unit rolled back alone, a failing commit
failing the batch with nothing stored."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import pytest
from sqlalchemy import event, text

from pioneer_grpc.store.batches import MAX_UNITS, answer_units
from pioneer_grpc.store.engine import create_engine
from pioneer_grpc.store.runner import OnLoop, TransactionRunner


@pytest.fixture
async def store(tmp_path):
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}")
    runner = TransactionRunner(engine)
    create = text("CREATE TABLE t (x INTEGER UNIQUE)")
    await runner.transact(lambda: None, lambda conn, _: conn.execute(create))
    commits: list[int] = []
    assert runner._sync is not None
    event.listen(runner._sync, "commit", lambda _conn: commits.append(1))
    yield runner, commits
    await runner.close()
    await engine.dispose()


def _insert(value: int):
    def work(conn, _prepared):
        conn.execute(text("INSERT INTO t VALUES (:x)"), {"x": value})
        return value

    return work


async def _rows(runner: TransactionRunner) -> list[int]:
    return await runner.read(lambda conn: [r[0] for r in conn.execute(text("SELECT x FROM t ORDER BY x"))])


async def _queued_behind_a_held_unit(runner: TransactionRunner, units):
    """Runs one unit that holds the thread until every unit of `units` waits, then lets them run:
    they are one batch."""
    started, release = threading.Event(), threading.Event()

    def hold(conn, _prepared):
        started.set()
        release.wait(30)
        return "held"

    held = asyncio.ensure_future(runner.transact(lambda: None, hold))
    await asyncio.to_thread(started.wait, 30)
    waiting = [asyncio.ensure_future(unit()) for unit in units]
    await asyncio.sleep(0)  # each submitted to the queue
    release.set()
    return await held, await asyncio.gather(*waiting, return_exceptions=True)


async def test_units_waiting_together_commit_once(store):
    runner, commits = store
    commits.clear()
    _, answers = await _queued_behind_a_held_unit(
        runner, [lambda v=v: runner.transact(lambda: None, _insert(v)) for v in range(10)]
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
        runner, [lambda v=v: runner.transact(lambda: None, _insert(v)) for v in range(10)]
    )
    assert [a for a, _ in answers] == list(range(10))
    assert wakes == [1, 10]  # the held unit's answer, then the batch's ten in one call


async def test_a_batch_takes_at_most_max_units(store):
    runner, commits = store
    commits.clear()
    count = MAX_UNITS + 3
    _, answers = await _queued_behind_a_held_unit(
        runner, [lambda v=v: runner.transact(lambda: None, _insert(v)) for v in range(count)]
    )
    assert [a for a, _ in answers] == list(range(count))
    assert len(commits) == 3


async def test_a_failing_unit_is_rolled_back_alone(store):
    runner, commits = store

    def fails_after_writing(conn, _prepared):
        conn.execute(text("INSERT INTO t VALUES (100)"))
        raise LookupError("refused")

    def refused_by_then(conn, _prepared):
        conn.execute(text("INSERT INTO t VALUES (200)"))
        return 200

    def then_refuses(_result):
        raise ValueError("body refused")

    commits.clear()
    _, answers = await _queued_behind_a_held_unit(
        runner,
        [
            lambda: runner.transact(lambda: None, _insert(1)),
            lambda: runner.transact(lambda: None, fails_after_writing),
            lambda: runner.transact(lambda: None, _insert(2)),
            lambda: runner.transact(lambda: None, refused_by_then, then=then_refuses),
            lambda: runner.transact(lambda: None, _insert(1)),  # a unique violation: its statement fails
            lambda: runner.transact(lambda: (_ for _ in ()).throw(KeyError("prepare")), _insert(3)),
            lambda: runner.transact(lambda: None, _insert(4)),
        ],
    )
    assert answers[0] == (1, None)
    assert isinstance(answers[1], LookupError)
    assert answers[2] == (2, None)
    assert isinstance(answers[3], ValueError)
    assert "UNIQUE constraint failed: t.x" in str(answers[4]), repr(answers[4])
    assert isinstance(answers[5], KeyError)
    assert answers[6] == (4, None)
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

    def dooms_the_commit(conn, prepared):
        fail["on"] = True  # the next commit, this batch's, fails
        return _insert(6)(conn, prepared)

    held, answers = await _queued_behind_a_held_unit(
        runner,
        [
            lambda: runner.transact(lambda: None, dooms_the_commit),
            *[lambda v=v: runner.transact(lambda: None, _insert(v)) for v in (7, 8, 9)],
        ],
    )
    assert held == ("held", None)
    assert [type(a).__name__ for a in answers] == ["Unavailable"] * 4, answers
    assert await _rows(runner) == []
    # The thread goes on: the next unit commits.
    assert (await runner.transact(lambda: None, _insert(5)))[0] == 5
    assert await _rows(runner) == [5]


async def test_beside_runs_while_the_batch_commits_and_its_callers_hear_once_committed(store):
    """Each unit's `beside` begins on its caller's loop before the batch's COMMIT (the COMMIT
    here waits for both to have run), and each caller hears `beside`'s answer once the batch
    committed: another connection sees its rows then."""
    runner, _ = store
    loop_thread = threading.get_ident()
    ran: list[tuple[int, bool]] = []
    both_ran = threading.Event()
    seen_at_commit: list[bool] = []

    def beside(result):
        ran.append((result, threading.get_ident() == loop_thread))
        if len(ran) == 2:
            both_ran.set()
        return result * 10

    batch_ran = threading.Event()  # the two units' batch, not the held unit's

    def before_commit(_conn) -> None:
        if batch_ran.is_set():
            seen_at_commit.append(both_ran.wait(30))

    assert runner._sync is not None
    event.listen(runner._sync, "commit", before_commit)

    def committed_rows() -> list[int]:
        db = runner._sync.url.database  # type: ignore[union-attr]
        with sqlite3.connect(db) as other:
            return [r[0] for r in other.execute("SELECT x FROM t ORDER BY x")]

    async def unit(value: int) -> tuple[int, list[int]]:
        small = OnLoop(beside=lambda result: result == 1)  # the other in a worker thread
        work = _insert(value)

        def inserts(conn, prepared):
            batch_ran.set()
            return work(conn, prepared)

        answer, _ = await runner.transact(lambda: None, inserts, beside=beside, on_loop=small)
        return answer, committed_rows()

    try:
        _, answers = await _queued_behind_a_held_unit(runner, [lambda v=v: unit(v) for v in (1, 2)])
    finally:
        event.remove(runner._sync, "commit", before_commit)
    assert answers == [(10, [1, 2]), (20, [1, 2])]
    assert sorted(ran) == [(1, True), (2, False)]
    assert seen_at_commit == [True]  # the batch's COMMIT began once both had run


async def test_a_failed_commit_answers_its_error_though_beside_ran(store):
    runner, _ = store
    ran: list[int] = []

    def beside(result):
        ran.append(result)
        return result

    def dooms_the_commit(_conn):
        raise OSError("disk I/O error")

    assert runner._sync is not None
    event.listen(runner._sync, "commit", dooms_the_commit)
    try:
        with pytest.raises(Exception) as failed:
            await runner.transact(lambda: None, _insert(3), beside=beside, on_loop=OnLoop(beside=bool))
    finally:
        event.remove(runner._sync, "commit", dooms_the_commit)
    assert type(failed.value).__name__ == "Unavailable"
    assert ran == [3]
    assert await _rows(runner) == []
    assert (await runner.transact(lambda: None, _insert(4)))[0] == 4
