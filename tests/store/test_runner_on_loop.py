"""On PostgreSQL a unit's small blocking steps run on the event loop, its large ones in a worker thread.

`OnLoop` names the small steps (store/runner.py); a PrepareTurn round names them by the
request's size, the turn's own messages and the body's source size (service/turn.py), an
append its `prepare` by the batch's size (service/history.py). A
step run on the loop still rolls the unit back when it raises before the commit.
"""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import text

from pioneer_grpc.service import history, turn
from pioneer_grpc.store.engine import create_engine
from pioneer_grpc.store.runner import OnLoop, TransactionRunner, nothing
from pioneer_grpc.v1 import history_pb2, turn_service_pb2

pytestmark = pytest.mark.postgres


async def _steps_run_in(
    url: str, on_loop: OnLoop[int] | None, fail_then: bool = False
) -> tuple[dict[str, bool], int]:
    """Which steps ran on the event loop's thread, and the rows the table holds afterwards."""
    engine = create_engine(url)
    runner = TransactionRunner(engine)
    loop_thread = threading.get_ident()
    on: dict[str, bool] = {}

    def step(name: str, value: int) -> int:
        on[name] = threading.get_ident() == loop_thread
        if name == "then" and fail_then:
            raise KeyError("refused")
        return value

    def work(conn, prepared: int) -> int:
        conn.execute(text("INSERT INTO t VALUES (:x)"), {"x": prepared})
        return prepared

    kwargs = {} if on_loop is None else {"on_loop": on_loop}
    try:
        await runner.transact(nothing, lambda conn, _: conn.execute(text("CREATE TABLE t (x INTEGER)")))
        try:
            await runner.transact(
                lambda: step("prepare", 1),
                work,
                then=lambda r: step("then", r),
                beside=lambda r: step("beside", r),
                **kwargs,
            )
        except KeyError:
            pass
        rows = await runner.read(lambda conn: conn.execute(text("SELECT count(*) FROM t")).scalar_one())
    finally:
        await runner.close()
        await engine.dispose()
    return on, rows


async def test_every_step_hops_unless_named_small(postgres_url):
    on, rows = await _steps_run_in(postgres_url, None)
    assert on == {"prepare": False, "then": False, "beside": False}
    assert rows == 1


async def test_steps_named_small_run_on_the_event_loop(postgres_url):
    on, _ = await _steps_run_in(postgres_url, OnLoop(True, lambda r: r == 1, lambda r: r != 1))
    assert on == {"prepare": True, "then": True, "beside": False}


async def test_a_step_on_the_loop_that_raises_rolls_the_unit_back(postgres_url):
    on, rows = await _steps_run_in(postgres_url, OnLoop(True, lambda r: True, lambda r: True), fail_then=True)
    assert on == {"prepare": True, "then": True}
    assert rows == 0


def _request(text_bytes: int) -> turn_service_pb2.PrepareTurnRequest:
    entry = history_pb2.ConversationEntry(
        entry_id="e1", role=history_pb2.ENTRY_ROLE_USER, content="x" * text_bytes
    )
    return turn_service_pb2.PrepareTurnRequest(thread_id="t", turn_id="u", new_entries=[entry])


def test_a_round_runs_prepare_on_the_loop_only_for_a_small_request():
    assert turn._on_loop(_request(1000)).prepare
    assert not turn._on_loop(_request(turn._ON_LOOP_REQUEST_BYTES)).prepare


def test_an_append_runs_prepare_on_the_loop_only_for_a_small_batch():
    small = _request(1000).new_entries
    assert history._on_loop(small).prepare
    assert not history._on_loop([*small, *_request(history._ON_LOOP_BATCH_BYTES).new_entries]).prepare
