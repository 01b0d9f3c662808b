"""200 RPCs cancelled at random points (client deadlines and cancels) leave no connection,
transaction or lock behind: writes right after succeed and the pool is back at its size."""

from __future__ import annotations

import asyncio
import os
import random

import grpc
from grpc_health.v1 import health_pb2
from sqlalchemy import event

from pioneer_grpc.store.work import drain
from pioneer_grpc.v1 import (
    history_pb2,
    history_service_pb2,
    history_service_pb2_grpc,
    prompt_pb2,
    turn_service_pb2,
    turn_service_pb2_grpc,
)
from tests.builders import entry
from tests.chaos.conftest import health_status
from tests.support import pool_at_rest

CANCELS = 200
MAX_CALLS = 4_000
BATCH = 2
USER = history_pb2.ENTRY_ROLE_USER
THREAD = "storm"


def _entries(tag: str, count: int) -> list[history_pb2.ConversationEntry]:
    return [entry(f"{tag}-{k}", f"turn-{tag}", content="x" * 300) for k in range(count)]


def _rpc(history, turns, i: int):
    """The i-th call of the storm (method and request): every write path, a load and a list."""
    kind = i % 6
    if kind == 0:
        return turns.PrepareTurn, turn_service_pb2.PrepareTurnRequest(
            thread_id=THREAD,
            turn_id=f"p{i}",
            new_entries=[history_pb2.ConversationEntry(entry_id=f"pe{i}", role=USER, content="hello")],
            compile_input=prompt_pb2.PromptCompileInput(profile=prompt_pb2.PROMPT_PROFILE_FULL),
        )
    if kind == 1:
        return history.AppendEntries, history_service_pb2.AppendEntriesRequest(
            thread_id=THREAD, entries=_entries(f"a{i}", 20)
        )
    if kind == 2:
        return history.CreateThread, history_service_pb2.CreateThreadRequest(
            thread_id=f"{THREAD}-c{i}", config=history_pb2.ThreadConfig()
        )
    if kind == 3:
        return history.CompleteTurn, history_service_pb2.CompleteTurnRequest(
            thread_id=THREAD, turn_id=f"turn-a{i - 2}"
        )
    if kind == 5:
        return history.ListEntries, history_service_pb2.ListEntriesRequest(thread_id=THREAD)
    return history.LoadConversationHistory, history_service_pb2.LoadConversationHistoryRequest(
        thread_id=THREAD
    )


async def _interrupted(method, request, i: int, rng: random.Random) -> str:
    """Odd calls carry a short deadline; even ones are cancelled by the client after a random delay."""
    try:
        if i % 2:
            await method(request, timeout=rng.uniform(0.0002, 0.01))
            return "OK"
        call = method(request)
        await asyncio.sleep(rng.uniform(0, 0.008))
        call.cancel()
        await call
        return "OK"
    except grpc.aio.AioRpcError as error:
        return error.code().name
    except asyncio.CancelledError:
        return "CANCELLED"


def _open_files_of(database: str) -> int:
    """File descriptors of this process open on the database file (one per SQLite connection)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == database:
                count += 1
        except OSError:
            continue
    return count


async def test_cancel_storm_leaves_nothing_behind(pg_server):
    rng = random.Random(int(os.environ.get("CHAOS_SEED", "11")))
    channel = pg_server.channel()
    history = history_service_pb2_grpc.HistoryServiceStub(channel)
    turns = turn_service_pb2_grpc.TurnServiceStub(channel)
    await history.CreateThread(
        history_service_pb2.CreateThreadRequest(thread_id=THREAD, config=history_pb2.ThreadConfig(model="m"))
    )
    outcomes: dict[str, int] = {}
    # A cancel thrown into a statement makes SQLAlchemy invalidate the connection (and the pool
    # open another): every unit of database work must run to its end instead (store/work.py).
    invalidated: list[BaseException | None] = []
    event.listen(
        pg_server.ctx.store.engine.sync_engine.pool, "invalidate", lambda _c, _r, exc: invalidated.append(exc)
    )

    def interrupted() -> int:
        return outcomes.get("CANCELLED", 0) + outcomes.get("DEADLINE_EXCEEDED", 0)

    # A call may finish before its cancel lands, more often on a fast machine: the storm goes on
    # until CANCELS calls were interrupted, within a bounded number of calls.
    start = 0
    while interrupted() < CANCELS and start < MAX_CALLS:
        batch = [_interrupted(*_rpc(history, turns, i), i, rng) for i in range(start, start + BATCH)]
        for code in await asyncio.gather(*batch):
            outcomes[code] = outcomes.get(code, 0) + 1
        start += BATCH
    # None fails for another reason (no INTERNAL, no lock error).
    assert set(outcomes) <= {"OK", "CANCELLED", "DEADLINE_EXCEEDED", "NOT_FOUND"}, outcomes
    assert interrupted() >= CANCELS, outcomes
    assert invalidated == [], f"{len(invalidated)} connections invalidated: {invalidated[:3]}"

    # Normal writes go through: no lock or transaction was left behind.
    for k in range(5):
        response = await history.AppendEntries(
            history_service_pb2.AppendEntriesRequest(thread_id=THREAD, entries=_entries(f"after{k}", 3)),
            timeout=10,
        )
        assert response.created_count == 3
        await history.CreateThread(
            history_service_pb2.CreateThreadRequest(
                thread_id=f"after-{k}", config=history_pb2.ThreadConfig()
            ),
            timeout=10,
        )
    assert await health_status(channel) == health_pb2.HealthCheckResponse.SERVING

    # The work of cancelled calls has ended; every connection is back, none was leaked.
    assert await drain(30) == 0
    state = await pool_at_rest(pg_server)
    assert state.checked_out == 0, state
    assert state.open <= state.size + state.max_overflow, state
    if pg_server.ctx.store.engine.dialect.name == "sqlite":
        assert state.open == state.size == 1, state
        # The pool's one and the transaction runner's own (store/runner.py). (A replaced
        # connection would leave a third: SQLite defers closing its descriptor while another
        # connection of the process holds a lock on the file.)
        assert _open_files_of(str(pg_server.ctx.store.engine.url.database)) <= 2
