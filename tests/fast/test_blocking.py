"""A use case's blocking steps: on the event loop when small, in a worker thread when not; an encoding
not loaded yet is loaded off the event loop (service/history_load.py `blocking`)."""

from __future__ import annotations

import threading

from pioneer_grpc.history import tokens
from pioneer_grpc.service import history, history_load, turn
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.v1 import history_pb2
from tests.fast.test_rounds import _request
from tests.store.contract.rows import user


async def test_small_work_runs_on_the_loop_and_large_work_beside_it() -> None:
    here = threading.get_ident()
    assert await history_load.blocking(threading.get_ident, off_loop=False) == here
    assert await history_load.blocking(threading.get_ident, off_loop=True) != here


async def test_an_encoding_not_loaded_is_loaded_off_the_loop_and_the_work_runs_again(monkeypatch) -> None:
    here = threading.get_ident()
    loaded_in: list[int] = []
    is_loaded = tokens.is_loaded
    real_load = tokens.get_encoding

    def loading(name: str):  # type: ignore[no-untyped-def]
        loaded_in.append(threading.get_ident())
        return real_load(name)

    monkeypatch.setattr(tokens, "is_loaded", lambda name: bool(loaded_in) and is_loaded(name))
    monkeypatch.setattr(tokens, "get_encoding", loading)
    runs: list[int] = []

    def count() -> list[int]:
        runs.append(threading.get_ident())
        return tokens.count_blocking(["hello world"], "o200k_base")

    assert await history_load.blocking(count, off_loop=False) == [2]
    assert runs == [here, here]  # refused once, then counted on the loop once loaded
    assert loaded_in and loaded_in[0] != here


async def test_a_rounds_steps_leave_the_loop_only_for_a_large_request(
    ctx: ServiceContext, monkeypatch
) -> None:
    await history.create_thread(ctx, "t", history_pb2.ThreadConfig(model="claude-sonnet-4-5"))
    off: list[bool] = []
    blocking = history_load.blocking

    async def noted(work, off_loop):  # type: ignore[no-untyped-def]
        off.append(off_loop)
        return await blocking(work, off_loop)

    monkeypatch.setattr(history_load, "blocking", noted)
    await turn.prepare_turn(ctx, _request("u1", user("q1", "", "small")))
    assert off == [False, True]  # the checks and counts on the loop; the history read whole beside it
    off.clear()
    await turn.prepare_turn(ctx, _request("u1", user("q2", "", "kept")))
    assert off == [False, False]  # the history kept: the decision on the loop too
    off.clear()
    await turn.prepare_turn(ctx, _request("u1", user("q3", "", "x" * turn._ON_LOOP_REQUEST_BYTES)))
    assert off == [True, True]
