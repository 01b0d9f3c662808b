"""Each write use case is one unit of work of the store's runner: all of it or none of it.

No module of the store begins a transaction but the runner. A compaction (the
mark of a failed one cleared, the summary stored) and a manifest record (the
thread and turn created, the event, the turn's pointer) that fail halfway leave
nothing; a caller cancelled while its unit runs sees its cancellation only once
the unit ended whole (a manifest's event published to live observers by then),
and no lock or connection is left behind. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import ast
import asyncio
import errno
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Connection

import pioneer_grpc.store
from pioneer_grpc.errors import ResourceExhausted
from pioneer_grpc.service.history_load import load_history
from pioneer_grpc.service.observe import record_manifest
from pioneer_grpc.service.turn import prepare_turn
from pioneer_grpc.store import manifests, summaries, threads
from pioneer_grpc.store.models import EntryRow, ManifestEventRow, SummaryRow, ThreadRow, TurnRow
from pioneer_grpc.store.work import drain
from pioneer_grpc.v1 import history_pb2, prompt_pb2, turn_service_pb2
from tests.history.agent_turns import tool_turn
from tests.history.rpc import config, create, load
from tests.history.rpc import turn as complete
from tests.support import failure, pool_at_rest

USER = history_pb2.ENTRY_ROLE_USER
STORE = Path(pioneer_grpc.store.__file__).parent
# The runner (batches.py is its SQLite side); not use cases: the schema migration at start and the
# disk probe each own their one statement.
NOT_USE_CASES = {"runner.py", "batches.py", "migrate.py", "probe.py"}


def _begun(path: Path) -> list[str]:
    """Where `path` begins a transaction itself (`x.begin()`, `x.begin_nested()`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("begin", "begin_nested")
        ):
            found.append(f"{path.relative_to(STORE)}:{node.lineno}")
    return found


def test_no_module_of_the_store_but_its_runner_begins_a_transaction():
    modules = [p for p in STORE.rglob("*.py") if "migrations" not in p.parts]
    assert len(modules) > 15  # the walk sees the store
    assert _begun(STORE / "runner.py")  # and would see a begin
    begun = [where for path in modules if path.name not in NOT_USE_CASES for where in _begun(path)]
    assert begun == []


async def _value(server: Any, statement: Any) -> Any:
    def read(conn: Connection) -> Any:
        return conn.execute(statement).scalar()

    return await server.ctx.store.runner.read(read)


async def _mark(server: Any, thread_id: str) -> int | None:
    statement = select(ThreadRow.compaction_failed_sequence).where(ThreadRow.thread_id == thread_id)
    return await _value(server, statement)  # type: ignore[no-any-return]


async def _summaries(server: Any, thread_id: str) -> int:
    return int(await _value(server, select(func.count()).where(SummaryRow.thread_id == thread_id)))


async def _set_mark(server: Any, thread_id: str, sequence: int) -> None:
    def work(conn: Connection) -> None:
        threads.mark_compaction_in(conn, "default", thread_id, sequence)

    await server.ctx.store.runner.transact(work)


def _then(original: Callable[..., Any], after: Callable[[], None]) -> Callable[..., Any]:
    """`original`, then `after()` (which may raise): inside the unit, after its statement ran."""

    def run(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        after()
        return result

    return run


def _disk_full() -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


async def _over_threshold(server: Any) -> Any:
    """A thread whose next load summarizes, marked as if a compaction had failed before."""
    history = await server.client()
    await create(history, "t", config(3_000, 1_000))
    for i in range(12):
        entries = tool_turn(i, lines=8)
        await complete(history, "t", entries[0].turn_id, *entries)
    await _set_mark(server, "t", 0)  # covers nothing: the summarizer is asked again
    return history


async def _no_lock_or_connection_left(server: Any, history: Any, failed: bool = False) -> None:
    """Every unit ended, none holds a connection, and a write right after goes through.

    After a database failure the health probe runs at once (server/health.py) on a
    connection of its own: then the pool is not looked at."""
    assert await drain(5.0) == 0
    if not failed:
        assert (await pool_at_rest(server)).checked_out == 0
    entries = tool_turn(99, lines=1)
    await complete(history, "t", entries[0].turn_id, *entries)  # a write right after goes through


@pytest.fixture
async def probed_server(database_url: str, server_factory: Any) -> Any:
    """pg_server whose health probe is nearly always under way: each check that no connection is
    left behind must see past the probe's own (tests/support.py pool_at_rest)."""
    return await server_factory(database_url=database_url, health_probe_seconds=0.005)


async def test_a_compaction_that_fails_halfway_stores_nothing(pg_server, monkeypatch):
    history = await _over_threshold(pg_server)
    monkeypatch.setattr(summaries, "add_summary_in", _then(summaries.add_summary_in, _disk_full))
    failed = await failure(load(history, "t"))
    assert failed.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    # The mark was cleared and the summary inserted, then the unit failed: neither stayed.
    assert await _summaries(pg_server, "t") == 0
    assert await _mark(pg_server, "t") == 0
    await _no_lock_or_connection_left(pg_server, history, failed=True)

    monkeypatch.undo()
    done = await load(history, "t")
    assert done.report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED
    assert await _summaries(pg_server, "t") == 1
    assert await _mark(pg_server, "t") is None


async def test_a_compaction_cancelled_in_its_unit_ends_whole(probed_server, monkeypatch):
    pg_server = probed_server
    history = await _over_threshold(pg_server)
    loop = asyncio.get_running_loop()
    caller = asyncio.create_task(load_history(pg_server.ctx, "t"))
    cancel = _then(lambda: None, lambda: loop.call_soon_threadsafe(caller.cancel))
    monkeypatch.setattr(summaries, "add_summary_in", _then(summaries.add_summary_in, cancel))
    with pytest.raises(asyncio.CancelledError):
        await caller
    # The caller was cancelled after the summary's statement: the unit still ran to its end.
    assert await _summaries(pg_server, "t") == 1
    assert await _mark(pg_server, "t") is None
    await _no_lock_or_connection_left(pg_server, history)
    monkeypatch.undo()
    reused = await load(history, "t")
    assert reused.report.summary_use == history_pb2.SUMMARY_USE_REUSED


def _manifest() -> prompt_pb2.PromptManifest:
    return prompt_pb2.PromptManifest(fingerprint_stable="s" * 64, fingerprint_full="f" * 64)


async def _recorded(server: Any) -> tuple[int, int, int, int | None]:
    """(threads "m", turns of it, its events, the turn's event id)."""
    return (
        int(await _value(server, select(func.count()).where(ThreadRow.thread_id == "m"))),
        int(await _value(server, select(func.count()).where(TurnRow.thread_id == "m"))),
        int(await _value(server, select(func.count()).where(ManifestEventRow.thread_id == "m"))),
        await _value(server, select(TurnRow.manifest_event_id).where(TurnRow.thread_id == "m")),
    )


async def test_a_manifest_record_that_fails_halfway_stores_nothing(pg_server, monkeypatch):
    # The thread, the turn and the event are written, then the unit fails.
    monkeypatch.setattr(manifests, "record_in", _then(manifests.record_in, _disk_full))
    with pytest.raises(ResourceExhausted):
        await record_manifest(pg_server.ctx, "m", "turn-1", _manifest())
    assert await _recorded(pg_server) == (0, 0, 0, None)
    assert await drain(5.0) == 0

    monkeypatch.undo()
    event_id = await record_manifest(pg_server.ctx, "m", "turn-1", _manifest())
    assert await _recorded(pg_server) == (1, 1, 1, event_id)


async def test_a_manifest_record_cancelled_in_its_unit_ends_whole(probed_server, monkeypatch):
    pg_server = probed_server
    observer = pg_server.ctx.hub.subscribe("m", capacity=10)
    loop = asyncio.get_running_loop()
    caller = asyncio.create_task(record_manifest(pg_server.ctx, "m", "turn-1", _manifest()))
    cancel = _then(lambda: None, lambda: loop.call_soon_threadsafe(caller.cancel))
    monkeypatch.setattr(manifests, "record_in", _then(manifests.record_in, cancel))
    with pytest.raises(asyncio.CancelledError):
        await caller
    made, turns, events, event_id = await _recorded(pg_server)
    assert (made, turns, events) == (1, 1, 1)
    assert event_id is not None
    assert event_id > 0  # PostgreSQL drew it at commit: the commit happened
    assert observer.pending == 1  # published before the caller saw its cancellation
    assert await drain(5.0) == 0
    assert (await pool_at_rest(pg_server)).checked_out == 0
    monkeypatch.undo()
    # A retry finds the turn holding this manifest: the same event, nothing written again.
    assert await record_manifest(pg_server.ctx, "m", "turn-1", _manifest()) == event_id
    assert (await _recorded(pg_server))[2] == 1


async def test_a_round_cancelled_in_its_unit_ends_whole_and_publishes_its_event(pg_server, monkeypatch):
    await create(await pg_server.client(), "m", config(model="gpt-4o"))
    observer = pg_server.ctx.hub.subscribe("m", capacity=10)
    request = turn_service_pb2.PrepareTurnRequest(
        thread_id="m",
        turn_id="turn-1",
        new_entries=[
            history_pb2.ConversationEntry(entry_id="u1", role=history_pb2.ENTRY_ROLE_USER, content="hi")
        ],
        compile_input=prompt_pb2.PromptCompileInput(profile=prompt_pb2.PROMPT_PROFILE_FULL),
    )
    loop = asyncio.get_running_loop()
    caller = asyncio.create_task(prepare_turn(pg_server.ctx, request))
    cancel = _then(lambda: None, lambda: loop.call_soon_threadsafe(caller.cancel))
    # Inside the round's commit, before its writes: the module of the store's own commit.
    commits_in = sys.modules[type(pg_server.ctx.store).__module__]
    monkeypatch.setattr(commits_in, "batch_of", _then(commits_in.batch_of, cancel))
    with pytest.raises(asyncio.CancelledError):
        await caller
    made, turns, events, event_id = await _recorded(pg_server)
    assert (made, turns, events) == (1, 1, 1)
    assert event_id is not None
    assert event_id > 0
    assert observer.pending == 1  # published before the caller saw its cancellation
    entries = select(func.count()).where(EntryRow.thread_id == "m")
    assert await _value(pg_server, entries) == 1
