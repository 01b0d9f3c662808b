"""Agent loops whose calls commit as one SQLite batch (store/batches.py) leave every thread as the
same calls made one by one do: the same answers, entries, history and manifests; a refused call in
the batch stores nothing and fails alone."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from pioneer_grpc.client.errors import RpcFailure
from pioneer_grpc.v1 import history_service_pb2, manifest_service_pb2, turn_service_pb2
from tests.history.agent_turns import tool_turn
from tests.history.rpc import config
from tests.support import eventually
from tests.turn.test_prepare_turn import Client, compile_input

THREADS = 6
TURNS = 3
Call = Callable[[Client], Awaitable[Any]]


def _steps(thread: str, i: int) -> list[Call]:
    """One turn of the loop on `thread`: PrepareTurn with the user's message, PrepareTurn with the
    call and its result, the answer appended, the turn completed."""
    user, call, result, answer = tool_turn(i, lines=6, prefix=f"{thread}-")

    def prepare(*entries: Any) -> Call:
        request = turn_service_pb2.PrepareTurnRequest(
            thread_id=thread, turn_id=user.turn_id, new_entries=list(entries), compile_input=compile_input()
        )
        return lambda client: client.prepare_turn(request)

    return [
        prepare(user),
        prepare(call, result),
        lambda client: client.append_entries(
            history_service_pb2.AppendEntriesRequest(thread_id=thread, entries=[answer])
        ),
        lambda client: client.complete_turn(
            history_service_pb2.CompleteTurnRequest(thread_id=thread, turn_id=user.turn_id)
        ),
    ]


def _refused(thread: str, i: int) -> Call:
    """A round whose call comes without its result: refused, nothing stored."""
    _, call, _, _ = tool_turn(i, lines=6, prefix=f"{thread}-")
    request = turn_service_pb2.PrepareTurnRequest(
        thread_id=thread, turn_id=call.turn_id, new_entries=[call], compile_input=compile_input()
    )
    return lambda client: client.prepare_turn(request)


def _comparable(answer: Any) -> Any:
    """An answer without what differs between two stores by nature: event ids (drawn across the
    whole store in commit order) and the time entries were stored."""
    if isinstance(answer, turn_service_pb2.PrepareTurnResponse):
        answer.manifest_event_id = 0
    for entry in getattr(answer, "entries", ()):
        entry.ClearField("create_time")
    return answer


def _without_event_id(found: Any) -> Any:
    """Event ids are drawn in commit order across the store: a batch's rounds commit in the order
    they came to their commits, which is not the order the calls were made."""
    found.event_id = 0
    return found


async def _batched(server: Any, client: Client, calls: list[Call], refused: int) -> list[Any]:
    """The calls made at once, their units of work held until every one is ready to commit, then
    queued while the SQLite thread is held, so that they wait and run as one batch. A round reads
    first (a job of the thread's own) and commits after (a unit): only the commits are batched;
    `refused` calls stop before theirs."""
    runner = server.ctx.store.runner
    transact = runner.transact
    arrived: list[None] = []
    gate = asyncio.Event()

    async def gated(*args: Any, **kwargs: Any) -> Any:
        arrived.append(None)
        await gate.wait()
        return await transact(*args, **kwargs)

    started, release = threading.Event(), threading.Event()

    def hold(_conn: Any) -> None:
        started.set()
        release.wait(30)

    runner.transact = gated
    try:
        answers = [asyncio.ensure_future(call(client)) for call in calls]
        units = len(calls) - refused
        await eventually(lambda: len(arrived) == units and sum(a.done() for a in answers) == refused)
        held = asyncio.ensure_future(transact(hold))
        await asyncio.to_thread(started.wait, 30)
        gate.set()
        await eventually(
            lambda: len(runner._batches._waiting) == units,
            what=f"every call waiting ({len(runner._batches._waiting)} of {units}, {len(arrived)} arrived)",
        )
        release.set()
        await held
    finally:
        del runner.transact
    return await asyncio.gather(*answers, return_exceptions=True)


async def test_rounds_committed_as_one_batch_leave_each_thread_as_rounds_one_by_one(server_factory, tmp_path):
    # One home (the compiled prompt names its files), a database each.
    batched, alone = [
        await server_factory(home=tmp_path / "home", database_url=f"sqlite+aiosqlite:///{tmp_path / name}")
        for name in ("batched.db", "alone.db")
    ]
    clients = Client(batched), Client(alone)
    threads = [f"t{n}" for n in range(THREADS)]
    for client in clients:
        for thread in threads:
            settings = config(400_000, 16_000, model="gpt-4o-mini")
            await client.create_thread(
                history_service_pb2.CreateThreadRequest(thread_id=thread, config=settings)
            )
    for i in range(TURNS):
        for step in range(4):
            calls = [_steps(thread, i)[step] for thread in threads]
            if step == 1:
                calls.append(_refused(threads[0], 100 + i))  # in the same batch, refused alone
            together = await _batched(batched, clients[0], calls, refused=int(step == 1))
            one_by_one = []
            for call in calls:
                try:
                    one_by_one.append(await call(clients[1]))
                except RpcFailure as exc:
                    one_by_one.append(exc)
            for got, want in zip(together, one_by_one, strict=True):
                if isinstance(want, RpcFailure):
                    assert (type(got), str(got)) == (type(want), str(want))
                else:
                    assert _comparable(got) == _comparable(want)
            assert sum(isinstance(a, RpcFailure) for a in together) == (step == 1)
    for thread in threads:
        loads = [
            await client.load_conversation_history(
                history_service_pb2.LoadConversationHistoryRequest(thread_id=thread)
            )
            for client in clients
        ]
        assert loads[0] == loads[1]
        assert len(loads[0].messages) == TURNS * 4
        entries = [
            await client.list_entries(history_service_pb2.ListEntriesRequest(thread_id=thread))
            for client in clients
        ]
        assert [(e.entry_id, e.content, e.token_count) for e in entries[0].entries] == [
            (e.entry_id, e.content, e.token_count) for e in entries[1].entries
        ]
        for i in range(TURNS):
            turn_id = tool_turn(i, prefix=f"{thread}-")[0].turn_id
            manifests = [
                await client.get_turn_manifest(
                    manifest_service_pb2.GetTurnManifestRequest(thread_id=thread, turn_id=turn_id)
                )
                for client in clients
            ]
            assert _without_event_id(manifests[0]) == _without_event_id(manifests[1])
            assert manifests[0].manifest.fingerprint_full
        turns = [
            await client.list_turns(history_service_pb2.ListTurnsRequest(thread_id=thread))
            for client in clients
        ]
        assert [(t.turn_id, t.status) for t in turns[0].turns] == [
            (t.turn_id, t.status) for t in turns[1].turns
        ]
        assert len(turns[0].turns) == TURNS
