"""PostgreSQL's own statements (store/postgres.py): each that does in one round trip what SQLite's
store does in several gives the answer and leaves the rows SQLite's statements give and leave, on
real PostgreSQL; every statement `Direct` runs straight on asyncpg gives and leaves what
SQLAlchemy's execution of it does; and what a statement that waited for the thread's lock does.

Each case runs on two copies of one seeded, migrated database: once the one
statement (`one`, PostgreSQL's store), once the separate statements SQLite's store
runs (`separately`, which `Direct` executes through SQLAlchemy on PostgreSQL); the
answers (or the errors) and every table afterwards must be equal. The clock is
fixed, so timestamps compare. The stores' whole answers, rounds included, are held
equal by the contract suite (tests/store/contract/).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest
from sqlalchemy import func, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from pioneer_grpc.errors import InvalidArgument, NotFound, PioneerError
from pioneer_grpc.history.entry_rules import StoredCalls, call_violations, named_call_ids
from pioneer_grpc.store import (
    append,
    driver,
    history_state,
    manifests,
    postgres,
    sql,
    sqlite,
    summaries,
    threads,
    turns,
)
from pioneer_grpc.store.driver import POSTGRESQL, Direct
from pioneer_grpc.store.engine import create_engine as engine_for
from pioneer_grpc.store.entries import THREAD_CALLS_CHUNK, NewEntry, entry_values, thread_calls_in
from pioneer_grpc.store.migrate import migrate
from pioneer_grpc.store.models import EntryRow, ThreadRow, ToolCallRow, TurnRow
from pioneer_grpc.store.port import (
    Conflict,
    HistoryAsk,
    PreparedManifest,
    Recorded,
    RoundAsk,
    RoundCommit,
)
from pioneer_grpc.store.runner import TransactionRunner
from pioneer_grpc.v1 import chat_pb2, common_pb2, history_pb2, prompt_pb2
from tests.databases import require_postgres
from tests.store.test_direct_statements import _EXPANDING_THREAD_CALLS, MOMENT, _entry

# The two stores' statements, without an engine: each method here runs on the connection it is given.
PG = postgres.PostgresStore.__new__(postgres.PostgresStore)
LITE = sqlite.SqliteStore.__new__(sqlite.SqliteStore)
PG.tokenizer_of = LITE.tokenizer_of = lambda model: "cl100k_base"
# Whose statements this file runs on asyncpg (every one of them is run by a case below).
MODULES = (postgres, sql, turns, history_state, manifests)
CLOCKED = (postgres, sqlite, append, turns, manifests)

pytestmark = pytest.mark.postgres
LATER = datetime(2026, 12, 1, 8, 0, 1, 5, tzinfo=UTC)
COMPLETED = history_pb2.TURN_STATUS_COMPLETED
IN_PROGRESS = history_pb2.TURN_STATUS_IN_PROGRESS
USER, ASSISTANT, TOOL = (
    history_pb2.ENTRY_ROLE_USER,
    history_pb2.ENTRY_ROLE_ASSISTANT,
    history_pb2.ENTRY_ROLE_TOOL,
)


def _seed(conn: Connection) -> None:
    conn.execute(
        ThreadRow.__table__.insert(),
        {
            "thread_id": "t",
            "max_context_tokens": 1000,
            "response_reserve_tokens": 100,
            "model": "m",
            "open_entries": 2,
            "open_turns": 1,
            "created_at": MOMENT,
            "updated_at": MOMENT,
        },
    )
    conn.execute(
        TurnRow.__table__.insert(),
        [
            {"thread_id": "t", "turn_id": turn, "status": status, "created_at": MOMENT, "updated_at": MOMENT}
            for turn, status in (("u1", COMPLETED), ("u2", IN_PROGRESS), ("empty", IN_PROGRESS))
        ],
    )
    conn.execute(
        EntryRow.__table__.insert(),
        [
            _entry("e1", "u1", True, content="q"),
            _entry("e2", "u1", True, content="a", reasoning_content="why"),
            _entry("e3", "u2", False, content="open"),
            _entry("e4", "u2", False, content="open too"),
        ],
    )
    conn.execute(
        ToolCallRow.__table__.insert(),
        [
            {"thread_id": "t", "call_id": "c1", "entry_id": "e2"},
            # An id reused by another entry (models reuse ids across turns).
            {"thread_id": "t", "call_id": "c1", "entry_id": "e4"},
        ],
    )


def _rows(*entries: tuple[str, str, dict[str, Any]]) -> list[dict[str, Any]]:
    """New entries' rows (entry_id, turn_id, fields), as an append writes them at LATER."""
    return [
        {
            **entry_values(
                "t",
                NewEntry(
                    history_pb2.ConversationEntry(entry_id=entry_id, turn_id=turn, role=2, **fields), "h9", 7
                ),
                "cl100k_base",
                LATER,
            ),
            "tenant": "default",
        }
        for entry_id, turn, fields in entries
    ]


_CALL = common_pb2.ToolCall(id="c9", name="read", arguments="{}")
_PART = chat_pb2.ContentPart(text="part")
_BATCH = _rows(
    ("e9", "u2", {"content": "call", "tool_calls": [_CALL], "reasoning_content": "because"}),
    ("e1", "u1", {"content": "q"}),  # stored already: not inserted, its call not either
    ("e10", "new", {"content": "", "content_parts": [_PART]}),
    ("e11", "new", {"content": "more", "name": "n", "tool_call_id": "c9"}),
)
_BATCH_CALLS = [
    {"thread_id": "t", "call_id": "c9", "entry_id": "e9", "tenant": "default"},
    {"thread_id": "t", "call_id": "c1", "entry_id": "e1", "tenant": "default"},
    {"thread_id": "t", "call_id": "c1", "entry_id": "e9", "tenant": "default"},
]


def _batch(rows: list[dict[str, Any]], calls: list[dict[str, str]] | None = None) -> append.Batch:
    """New entries' rows and their calls' as an append's batch, at LATER."""
    return append.Batch((), rows, calls or [], LATER)


def _inserted_by_statements(
    conn: Connection, thread_id: str, batch: append.Batch, fresh_turns: list[str]
) -> dict[str, int]:
    """`append.inserted_separately` with PostgreSQL's INSERT ... ON CONFLICT built by SQLAlchemy."""
    insert_entry = (
        postgresql.insert(EntryRow)
        .on_conflict_do_nothing(index_elements=["thread_id", "entry_id", "tenant"])
        .returning(EntryRow.id, EntryRow.entry_id)
    )
    insert_call = postgresql.insert(ToolCallRow).on_conflict_do_nothing(
        index_elements=["thread_id", "call_id", "entry_id", "tenant"]
    )
    rows, calls, moment = batch.rows, batch.calls, batch.moment
    created = {}
    for row in rows:
        found = conn.execute(insert_entry, row).first()
        if found is not None:
            created[found.entry_id] = found.id
    if not created:
        return created
    opened = {row["turn_id"] for row in rows if row["entry_id"] in created}
    touch = {
        "b_thread_id": thread_id,
        "b_tenant": "default",
        "b_updated_at": moment,
        "b_entries": len(created),
        "b_turns": len(opened & set(fresh_turns)),
    }
    conn.execute(sqlite._TOUCH_THREAD.statement, touch)
    for call in calls:
        if call["entry_id"] in created:
            conn.execute(insert_call, call)
    return created


def _recorded_in_one(conn: Connection, columns: dict[str, Any]) -> int:
    """PostgreSQL's record: the event with a provisional id and the turn's columns, one statement."""
    event_id: int = manifests._RECORD_PG.first(conn, columns).id
    return event_id


def _recorded_by_statements(conn: Connection, columns: dict[str, Any]) -> int:
    """`_recorded_in_one` as SQLAlchemy's INSERT with a provisional id, then the turn's UPDATE (SQLite's)."""
    provisional = manifests._INSERT_EVENT_SQLITE.statement.values(
        id=-func.nextval("manifest_events_provisional_id_seq")
    )
    event = {name: columns[name] for name in ("b_thread_id", "b_tenant", "b_turn_id", "b_manifest_pb")}
    event_id: int = conn.execute(provisional, {**event, "b_created_at": columns["b_updated_at"]}).scalar_one()
    conn.execute(manifests._UPDATE_TURN_SQLITE.statement, {**columns, "b_event_id": event_id})
    return event_id


def _manifest_columns(turn_id: str, fingerprint: str) -> dict[str, Any]:
    return {
        "b_thread_id": "t",
        "b_tenant": "default",
        "b_turn_id": turn_id,
        "b_manifest_pb": b"\x08\x01",
        "b_json": f'{{"fingerprint": "{fingerprint}"}}',
        "b_version": "v1",
        "b_profile": "full",
        "b_stable": "s",
        "b_dynamic": "d",
        "b_full": fingerprint,
        "b_updated_at": LATER,
    }


def _prepared(turn_id: str, fingerprint: str, thread_id: str = "t") -> PreparedManifest:
    manifest = prompt_pb2.PromptManifest(compiler_version="v1", fingerprint_full=fingerprint)
    return manifests.prepare_manifest(thread_id, turn_id, manifest)


def _new(*entries: tuple[str, str, dict[str, Any]]) -> list[NewEntry]:
    return [
        NewEntry(
            history_pb2.ConversationEntry(entry_id=entry_id, turn_id=turn, **fields),
            f"h-{entry_id}-{fields.get('content', '')}",
            5,
        )
        for entry_id, turn, fields in entries
    ]


_ASKED = _new(("n1", "r1", {"role": USER, "content": "go"}))
_CALLED = _new(
    ("n2", "u2", {"role": ASSISTANT, "tool_calls": [_CALL]}),
    ("n3", "u2", {"role": TOOL, "tool_call_id": "c9", "content": "read"}),
)


# The seeded e3 again, as stored (its content hash).
_STORED_E3 = [
    NewEntry(history_pb2.ConversationEntry(entry_id="e3", turn_id="u2", role=1, content="open"), "h", 3)
]


def _turn(locked: sql.LockedTurn) -> tuple[Any, ...]:
    """A locked turn as a comparable value."""
    return locked.record, locked.entries, locked.thread_calls, locked.completed


def _locked_then_turn(conn: Connection, thread_id: str, turn_id: str, call_ids: list[str]) -> Any:
    """`lock_thread_and_turn` as SQLite's statements: the lock, then the turn's."""
    model, turn, _ = LITE.lock_thread_and_turn(conn, thread_id, turn_id, call_ids, None, None, False)
    return model, _turn(turn)


def _lock_and_turn(conn: Connection, thread_id: str, turn_id: str, call_ids: list[str]) -> Any:
    """PostgreSQL's `lock_thread_and_turn` without a batch: the thread's model and the turn."""
    model, turn, inserted = PG.lock_thread_and_turn(conn, thread_id, turn_id, call_ids, None, None, False)
    assert inserted is None
    return model, _turn(turn)


def _appends(in_one: bool, complete: bool = False) -> Way:
    """AppendEntries' writes of `new` (NewEntry, one turn) as `_append_in` makes them: the batch
    inserted by the lock's statement when the thread's model is `counted_model` (`in_one`), or
    the lock's statements, then the append's; its answer, the turn before the batch, the entries
    created. `complete`: CompleteTurn's, the turn completed too, by the lock's statement when it
    inserted (`in_one`) or by the completion's after the append; with how many it completed."""

    def appends(conn: Connection, new: list[NewEntry], counted_model: str) -> Any:
        entries = [n.entry for n in new]
        turn_id = entries[0].turn_id
        batch = append.batch_of("default", "t", new, "cl100k_base")
        store = PG if in_one else LITE
        locked, turn, inserted = store.lock_thread_and_turn(
            conn, "t", turn_id, named_call_ids(entries), batch, counted_model, complete
        )

        def check(stored: StoredCalls) -> None:
            InvalidArgument.raise_if(call_violations(entries, stored, "entries"))

        turns = {turn_id: turn.record}
        # SQLite's inserts a row at a time; its INSERT ... ON CONFLICT as PostgreSQL's.
        insert = functools.partial(PG.inserted if in_one else _inserted_by_statements, conn)
        created = append.append_rows(
            conn,
            "default",
            "t",
            turns,
            batch,
            check,
            insert,
            {turn_id: turn.entries},
            turn.thread_calls,
            inserted,
        )
        answer = (locked, _turn(turn)[:3], [(n, row["entry_id"]) for n, row in created])
        if not complete:
            return answer
        completed = turn.completed
        if completed is None:
            completed = store.completed_under_lock(conn, "t", turn_id)
        return (*answer, completed)

    return appends


def _locked_then_completed(conn: Connection, thread_id: str, turn_id: str) -> int:
    """`complete_in` as SQLite's statements: the lock, then the completion's."""
    return LITE.complete_in(conn, thread_id, turn_id)


def _opened(store: sql.SqlStore) -> Way:
    """A round's reads (`open_round_in`), all but the version (each store's own kind)."""

    def opened(conn: Connection, turn_id: str, after: int, call_ids: list[str], entry_ids: list[str]) -> Any:
        history = HistoryAsk("t", turn_id, extend=None, whole=after == 0, max_turns=1)
        ask = RoundAsk("t", turn_id, history, tuple(call_ids), tuple(entry_ids))
        found = store.open_round_in(conn, ask)
        read = dataclasses.replace(found.history, after=after)
        return read, found.turn, found.turn_entries, found.thread_calls, found.stored

    return opened


Way = Callable[..., Any]
# name -> (the one statement, the separate statements, the arguments of each run in order on one database)
CASES: dict[str, tuple[Way, Way, list[tuple[Any, ...]]]] = {
    "complete_turn": (
        PG.completed_under_lock,
        LITE.completed_under_lock,
        [("t", "u2"), ("t", "u2"), ("t", "u1"), ("t", "empty"), ("t", "nosuch"), ("nosuch", "u1")],
    ),
    "lock_and_complete_turn": (
        PG.complete_in,
        _locked_then_completed,
        [("t", "u2"), ("t", "u2"), ("t", "u1"), ("t", "empty"), ("t", "nosuch"), ("nosuch", "u1")],
    ),
    "lock_turn_with_entries": (
        lambda *args: _turn(PG.lock_turn_with_entries(*args)),
        lambda *args: _turn(LITE.lock_turn_with_entries(*args)),
        [
            ("t", "u2", ["c1", "c9"]),
            ("t", "new", []),
            ("t", "new", ["c1"]),
            ("t", "u1", ["zz"]),
            ("t", "empty", ["c1", "zz"]),
        ],
    ),
    "open_round": (
        _opened(PG),
        _opened(LITE),
        [
            ("u2", 0, ["c1", "c9"], ["e3", "e1", "zz"]),  # the whole history read (one turn at most)
            ("u2", 1, [], []),  # the completed entries after 1
            ("new", 0, ["c1"], ["e4"]),  # a turn not created yet
            ("u1", 2, [], ["e1", "e2"]),  # a completed turn
            ("empty", 0, [], []),
        ],
    ),
    "record_manifest": (
        _recorded_in_one,
        _recorded_by_statements,
        [
            (_manifest_columns("u2", "f1"),),
            (_manifest_columns("u2", "f2"),),
            (_manifest_columns("empty", "f3"),),
        ],
    ),
    "append_in_the_lock": (
        _appends(in_one=True),
        _appends(in_one=False),
        [
            (_ASKED, "m"),  # a new turn's first entry, counted for the thread's model
            (_ASKED, "m"),  # repeated: nothing created
            (_CALLED, "m"),  # a call and its result in a turn with entries
            (_new(("n6", "r1", {"role": USER, "content": "z"})), "other"),  # counted for another model
            # Refused after the insert either way: a repeat with other content, a completed turn.
            (_new(("n2", "u2", {"role": USER, "content": "x"})), "m"),
            (_new(("n4", "u1", {"role": USER, "content": "y"})), "m"),
            # Refused by the call checks: one statement inserted first, and rolls back.
            (_new(("n5", "u2", {"role": TOOL, "tool_call_id": "zz", "content": "?"})), "m"),
        ],
    ),
    "complete_in_the_lock": (
        _appends(in_one=True, complete=True),
        _appends(in_one=False, complete=True),
        [
            (_CALLED, "m"),  # a call and its result completing a turn with entries
            (_CALLED, "m"),  # repeated: the turn completed already, nothing created
            (_ASKED, "m"),  # a new turn
            (_new(("n8", "empty", {"role": ASSISTANT, "content": "done"})), "m"),  # a turn without entries
            (_new(("n6", "r2", {"role": USER, "content": "z"})), "other"),  # counted for another model
            (_new(("n4", "u1", {"role": USER, "content": "y"})), "m"),  # a completed turn: refused
            # Refused after the one statement inserted and completed, and rolled back: a result
            # without its call, a repeat with other content.
            (_new(("n5", "r3", {"role": TOOL, "tool_call_id": "zz", "content": "?"})), "m"),
            (_new(("e3", "r4", {"role": USER, "content": "x"})), "m"),
        ],
    ),
    # Every entry of the batch stored already, in a turn in progress: completed, nothing created.
    "complete_in_the_lock_repeats": (
        _appends(in_one=True, complete=True),
        _appends(in_one=False, complete=True),
        [(_STORED_E3, "m"), (_STORED_E3, "m")],
    ),
    "lock_thread_and_turn": (
        _lock_and_turn,
        _locked_then_turn,
        [
            ("t", "u2", ["c1", "c9"]),
            ("t", "new", []),
            ("t", "new", ["c1"]),
            ("t", "u1", []),
            ("nosuch", "u1", []),
        ],
    ),
    "append": (
        PG.inserted,
        _inserted_by_statements,
        [
            ("t", _batch(_BATCH, _BATCH_CALLS), ["new"]),
            ("t", _batch(_BATCH, _BATCH_CALLS), ["new"]),  # a repeat: nothing created, nothing touched
            ("t", _batch(_rows(("e12", "empty", {"content": "x"}))), ["empty"]),
            ("t", _batch(_rows(("e13", "u2", {"content": "y"}))), []),
        ],
    ),
}


async def _make_template(admin_url: str, name: str) -> None:
    admin = await asyncpg.connect(_plain(admin_url))
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    engine = create_async_engine(_on(admin_url, name))
    try:
        await migrate(engine)
        async with engine.begin() as conn:
            await conn.run_sync(_seed)
    finally:
        await engine.dispose()


async def _copy(template: tuple[str, str]) -> tuple[str, str]:
    """A new database made from the template: (the admin URL, its name); `_drop` it after."""
    admin_url, template_name = template
    name = "copy_" + uuid.uuid4().hex[:16]
    admin = await asyncpg.connect(_plain(admin_url))
    try:
        await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template_name}"')
    finally:
        await admin.close()
    return admin_url, name


async def _drop(admin_url: str, name: str) -> None:
    admin = await asyncpg.connect(_plain(admin_url))
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


def _plain(url: str) -> str:
    return url.replace("postgresql+asyncpg", "postgresql")


def _on(admin_url: str, name: str) -> str:
    return f"{admin_url.rsplit('/', 1)[0]}/{name}"


@pytest.fixture(scope="module")
def template() -> Iterator[tuple[str, str]]:
    """A migrated, seeded database every case copies; yields the cluster's admin URL and its name."""
    admin_url = require_postgres()
    name = "tpl_" + uuid.uuid4().hex[:16]
    asyncio.run(_make_template(admin_url, name))
    try:
        yield admin_url, name
    finally:
        asyncio.run(_drop(admin_url, name))


async def _tables(conn: asyncpg.Connection) -> dict[str, list[tuple[Any, ...]]]:
    names = [
        row["tablename"]
        for row in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    ]
    return {
        name: sorted(tuple(row) for row in await conn.fetch(f'SELECT * FROM "{name}"'))
        for name in sorted(names)
        if name != "alembic_version"
    }


async def _run_on_copy(
    template: tuple[str, str], way: Way, runs: list[tuple[Any, ...]]
) -> tuple[list[Any], dict[str, list[tuple[Any, ...]]]]:
    """Each run of `way` in a transaction of its own on a copy of the template (an error rolls its
    run back); the answers (an error as its class and text) and the tables afterwards."""
    admin_url, name = await _copy(template)
    try:
        engine = create_async_engine(_on(admin_url, name))
        answers: list[Any] = []
        try:
            for args in runs:
                try:
                    async with engine.begin() as conn:
                        answers.append(await conn.run_sync(way, *args))
                except PioneerError as error:
                    answers.append((type(error).__name__, str(error)))
        finally:
            await engine.dispose()
        raw = await asyncpg.connect(_plain(_on(admin_url, name)))
        try:
            return answers, await _tables(raw)
        finally:
            await raw.close()
    finally:
        await _drop(admin_url, name)


@pytest.mark.parametrize("case", sorted(CASES))
async def test_one_statement_gives_and_leaves_what_the_separate_ones_do(case, template, monkeypatch):
    for module in CLOCKED:
        monkeypatch.setattr(module, "now", lambda: LATER)
    one, separately, runs = CASES[case]
    answers_one, tables_one = await _run_on_copy(template, one, runs)
    answers_separately, tables_separately = await _run_on_copy(template, separately, runs)
    assert answers_one == answers_separately
    assert tables_one == tables_separately


async def test_the_comparison_sees_what_a_statement_changes(template, monkeypatch):
    """The comparison can fail: completing a turn changes the tables it compares."""
    monkeypatch.setattr(postgres, "now", lambda: LATER)
    _, before = await _run_on_copy(template, PG.completed_under_lock, [])
    answers, after = await _run_on_copy(template, PG.completed_under_lock, [("t", "u2")])
    assert answers == [2]
    assert before != after


def _calls_in_chunks(conn: Connection, call_ids: list[str]) -> dict[str, str]:
    return thread_calls_in(conn, "default", "t", call_ids)


def _calls_in_one_statement(conn: Connection, call_ids: list[str]) -> dict[str, str]:
    rows = conn.execute(_EXPANDING_THREAD_CALLS, {"thread_id": "t", "call_ids": call_ids})
    return {row.call_id: row.entry_id for row in rows}


async def test_the_thread_calls_read_in_chunks_are_what_one_expanding_statement_reads(template):
    unknown = [f"x{n}" for n in range(2 * THREAD_CALLS_CHUNK + 10)]
    runs = [
        (["c1"],),
        (["nosuch", "c1"],),
        ([*unknown[: THREAD_CALLS_CHUNK - 1], "c1"],),
        ([*unknown, "c1", "c1"],),
    ]
    chunked, _ = await _run_on_copy(template, _calls_in_chunks, runs)
    whole, _ = await _run_on_copy(template, _calls_in_one_statement, runs)
    assert chunked == whole
    assert chunked == [{"c1": "e4"}] * 4  # two entries made c1: the later one, as the rows' order gives


def _through_sqlalchemy(self: Direct, conn: Connection, params: Mapping[str, Any]) -> list[Any]:
    """`Direct.rows` as SQLAlchemy's execution of the statement."""
    result = conn.execute(self.statement, dict(params))
    return list(result) if result.returns_rows else []


# Every statement `Direct` runs on asyncpg is run by one of these: name -> (the function, the
# arguments of each run in order on one database).
DIRECT_CASES: dict[str, tuple[Way, list[tuple[Any, ...]]]] = {
    "lock_thread": (PG.lock_thread, [("t",), ("nosuch",)]),
    "commit_round": (
        lambda conn, *args: _provisional_as_minus_one(PG.commit_in(conn, _commit(conn, *args))),
        [
            ("u2", "f1", ["e3"], "0"),  # another version: nothing written
            ("u2", "f1", ["n1"], None),
            ("u2", "f1", ["n1"], None),  # the same manifest: no new event, the entry held already
            ("new", "f2", ["n2", "n3"], None),
            ("u1", "f3", [], None),  # the turn not in the status the round read: nothing written
        ],
    ),
    "lock_turn": (
        turns.lock_turn,
        [("default", "t", "u2"), ("default", "t", "new"), ("default", "t", "new")],
    ),
    "history_read": (
        history_state.history_read_in,
        [
            ("default", "t", "", 0),
            ("default", "t", "u2", 1),
            ("default", "t", "u1", history_state.NO_ENTRIES),
            ("default", "nosuch", "", 0),
        ],
    ),
    **{name: (one, runs) for name, (one, _, runs) in CASES.items()},
}


def _commit(
    conn: Connection, turn_id: str, fingerprint: str, entry_ids: list[str], version: str | None
) -> RoundCommit:
    """A round's commit of new entries `entry_ids` to the turn (in progress as the round read it), on
    the thread's row as it is (its version read here) unless `version` names another."""
    new = [n for n in (*_ASKED, *_CALLED) if n.entry.entry_id in entry_ids]
    if version is None:
        version = conn.execute(
            text("SELECT CAST(xmin AS text) FROM threads WHERE thread_id = 't'")
        ).scalar_one()
    return RoundCommit(
        "t",
        turn_id,
        version,
        IN_PROGRESS,
        _prepared(turn_id, fingerprint),
        [dataclasses.replace(n, entry=_in_turn(n.entry, turn_id)) for n in new],
        "cl100k_base",
        opens_turn=turn_id == "new",
    )


def _in_turn(entry: history_pb2.ConversationEntry, turn_id: str) -> history_pb2.ConversationEntry:
    moved = history_pb2.ConversationEntry()
    moved.CopyFrom(entry)
    moved.turn_id = turn_id
    return moved


def _provisional_as_minus_one(found: Recorded | Conflict) -> Any:
    """A commit's answer with a provisional (negative) event id as -1: the statement draws a
    provisional number for its upsert's proposed row too, so the numbers differ; never their use."""
    if isinstance(found, Conflict) or found.event_id > 0 or found.event is None:
        return found
    event = type(found.event)()
    event.CopyFrom(found.event)
    event.event_id = -1
    return Recorded(-1, event)


@pytest.mark.parametrize("case", sorted(DIRECT_CASES))
async def test_direct_on_asyncpg_gives_and_leaves_what_sqlalchemy_does(case, template, monkeypatch):
    for module in CLOCKED:
        monkeypatch.setattr(module, "now", lambda: LATER)
    function, runs = DIRECT_CASES[case]
    answers_direct, tables_direct = await _run_on_copy(template, function, runs)
    monkeypatch.setattr(Direct, "rows", _through_sqlalchemy)
    answers_sqlalchemy, tables_sqlalchemy = await _run_on_copy(template, function, runs)
    assert answers_direct == answers_sqlalchemy
    assert tables_direct == tables_sqlalchemy


async def test_every_direct_statement_for_postgres_runs_on_asyncpg_in_a_case(template, monkeypatch):
    ran: set[int] = set()
    on_asyncpg = driver._on_asyncpg

    def recorded(conn: Connection, adapted: Any, compiled: Any, params: Mapping[str, Any]) -> list[Any]:
        ran.add(id(compiled))
        return on_asyncpg(conn, adapted, compiled, params)

    monkeypatch.setattr(driver, "_on_asyncpg", recorded)
    for function, runs in DIRECT_CASES.values():
        await _run_on_copy(template, function, runs)
    every = _directs(POSTGRESQL)
    assert {name for name, direct in every.items() if id(direct._pg) in ran} == set(every)


def _directs(dialect: str) -> dict[tuple[str, str], Direct]:
    """Every `Direct` of MODULES compiled for `dialect`, by (module, name)."""
    found = {}
    for module in MODULES:
        short = module.__name__.rsplit(".", 1)[1]
        for name, value in vars(module).items():
            if isinstance(value, Direct) and dialect in value.dialects:
                found[short, name] = value
    return found


@contextlib.asynccontextmanager
async def _runner_on_copy(
    template: tuple[str, str],
) -> AsyncIterator[tuple[TransactionRunner, asyncpg.Connection]]:
    """A store runner on a copy of the template, and a raw connection to the copy."""
    admin_url, name = await _copy(template)
    engine = create_async_engine(_on(admin_url, name))
    runner = TransactionRunner(engine)
    try:
        raw = await asyncpg.connect(_plain(_on(admin_url, name)))
        try:
            yield runner, raw
        finally:
            await raw.close()
    finally:
        await runner.close()
        await engine.dispose()
        await _drop(admin_url, name)


_TRANSACTION_ID = Direct(text("SELECT txid_current() AS id"), dialects=(POSTGRESQL,))


async def test_a_direct_statement_first_in_a_unit_runs_in_its_transaction(template):
    """SQLAlchemy's adapter begins its transaction on its first statement; a direct one first begins
    it too: what it wrote is rolled back with the unit, and SQLAlchemy's statements after it share
    its transaction."""
    async with _runner_on_copy(template) as (runner, raw):
        before = await _tables(raw)

        def fails(conn: Connection) -> None:
            assert PG.completed_under_lock(conn, "t", "u2") == 2  # the unit's first statement
            raise RuntimeError("the unit fails after a direct write")

        with pytest.raises(RuntimeError):
            await runner.transact(fails)
        assert await _tables(raw) == before

        def transaction_ids(conn: Connection) -> tuple[int, int, int]:
            direct = _TRANSACTION_ID.first(conn, {}).id
            through = conn.execute(text("SELECT txid_current()")).scalar_one()
            return direct, through, _TRANSACTION_ID.first(conn, {}).id

        first, second, third = (await runner.transact(transaction_ids))[0]
        assert first == second == third
        again, _, _ = (await runner.transact(transaction_ids))[0]
        assert again != first  # each unit a transaction of its own
        committed = await runner.transact(lambda conn: PG.completed_under_lock(conn, "t", "u2"))
        assert committed[0] == 2
        assert await _tables(raw) != before


async def test_the_history_state_read_keeps_one_plan(template):
    """Prepared once, the state read is planned for its parameters' values only while PostgreSQL
    learns its cost, then runs one plan (`pg_prepared_statements` counts each kind): planning it
    anew for every round cost more than running it (store/history_state.py)."""
    admin_url, name = await _copy(template)
    try:
        conn = await asyncpg.connect(_plain(_on(admin_url, name)))
        try:
            await conn.execute(
                "INSERT INTO conversation_entries (thread_id, entry_id, turn_id, role, content, "
                "tool_calls_json, tool_call_id, name, artifact_refs_json, content_hash, token_count, "
                "tokenizer, completed, created_at) "
                "SELECT 't', 'x' || i, 'v' || (i / 4), 1, 'x', '[]', '', '', '[]', 'h', 1, 'cl100k_base', "
                "true, now() FROM generate_series(1, 400) AS i"
            )
            await conn.execute("ANALYZE")
            compiled = history_state._DIRECT._pg
            assert compiled is not None
            statement = await conn.prepare(compiled.sql)
            for after in [history_state.NO_ENTRIES] * 9 + [0]:
                values = compiled.values(
                    {"thread_id": "t", "tenant": "default", "exclude_turn_id": "u2", "after": after}
                )
                rows = await statement.fetch(*values)
            assert len(rows) == 402  # the last read, after 0: every completed entry
            generic, custom = await conn.fetchrow(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1",
                compiled.sql,
            )
            assert (generic, custom) == (5, 5)
        finally:
            await conn.close()
    finally:
        await _drop(admin_url, name)


async def _read_while_held(
    template: tuple[str, str], holder: Way, read: Way, *args: Any, alone: bool = False
) -> tuple[Any, Any]:
    """`read(conn, *args)` started while another transaction holds the thread's lock and runs
    `holder(conn)`, that transaction committed once the read waits for the lock; the read's
    answer, and its answer when run again after both, in a transaction of its own. `alone`: the
    first read runs outside a transaction, each statement its own (TransactionRunner.alone)."""
    admin_url, name = await _copy(template)
    engine = create_async_engine(_on(admin_url, name))
    try:
        async with engine.connect() as held:
            await held.begin()
            await held.run_sync(lambda conn: PG.lock_thread(conn, "t"))
            await held.run_sync(holder)

            async def reading() -> Any:
                if alone:
                    async with engine.connect() as conn:
                        await conn.execution_options(isolation_level="AUTOCOMMIT")
                        return await conn.run_sync(read, *args)
                async with engine.begin() as conn:
                    return await conn.run_sync(read, *args)

            # Each look a transaction of its own: within one, pg_stat_activity stays as first read.
            async with engine.connect() as watch, asyncio.timeout(60):
                await watch.execution_options(isolation_level="AUTOCOMMIT")
                waiting = text(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                )
                assert (await watch.execute(waiting)).scalar_one() == 0
                task = asyncio.create_task(reading())
                while not (await watch.execute(waiting)).scalar_one():
                    assert not task.done(), await task
                    await asyncio.sleep(0.01)
            await held.commit()
            answer = await task
        async with engine.begin() as conn:
            after = await conn.run_sync(read, *args)
        return answer, after
    finally:
        await engine.dispose()
        await _drop(admin_url, name)


def _completes_u2(conn: Connection) -> None:
    assert PG.completed_under_lock(conn, "t", "u2") == 2


def _appends_to_u2(conn: Connection) -> None:
    assert PG.inserted(conn, "t", _batch(_rows(("e20", "u2", {"content": "more"}))), [])


def _stores_a_summary(conn: Connection) -> None:
    threads.mark_compaction_in(conn, "default", "t", None)
    summaries.add_summary_in(conn, "default", "t", "so far", 3, "e2", 2, "m", "s", "cl100k_base")


# Each write of what the state read reads, done by the lock's holder.
CHANGES = {"complete": _completes_u2, "append": _appends_to_u2, "summary": _stores_a_summary}


async def _committed_after_a_wait(template: tuple[str, str], holder: Way) -> tuple[Any, Any]:
    """A round opened on a copy, then its commit statement started while another transaction holds
    the thread's lock and runs `holder(conn)`, that transaction committed once the commit waits;
    the commit's answer, and the turn's entries after."""
    admin_url, name = await _copy(template)
    engine = engine_for(_on(admin_url, name))
    store = postgres.PostgresStore(engine, lambda model: "cl100k_base")
    try:
        ask = RoundAsk("t", "r1", HistoryAsk("t", "r1", whole=False))
        opened = await store.rounds.open(ask)
        commit = RoundCommit(
            "t", "r1", opened.version, None, _prepared("r1", "f1"), _ASKED, "cl100k_base", opens_turn=True
        )
        async with engine.connect() as held:
            await held.begin()
            await held.run_sync(lambda conn: PG.lock_thread(conn, "t"))
            await held.run_sync(holder)
            async with engine.connect() as watch, asyncio.timeout(60):
                await watch.execution_options(isolation_level="AUTOCOMMIT")
                waiting = text(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                )
                committing = store.rounds.commit(commit)
                while not (await watch.execute(waiting)).scalar_one():
                    assert not committing.done.done(), await committing
                    await asyncio.sleep(0.01)
            await held.commit()
            answer = await committing
        entries = await store.runner.read(
            lambda conn: [
                row[0]
                for row in conn.execute(
                    text("SELECT entry_id FROM conversation_entries WHERE turn_id = 'r1'")
                )
            ]
        )
        return answer, entries
    finally:
        await store.close()
        await _drop(admin_url, name)


@pytest.mark.parametrize("change", sorted({**CHANGES, "nothing": lambda conn: None}))
async def test_a_round_commit_that_waited_for_a_change_writes_nothing(change, template):
    """A round's commit statement that waited for the thread's lock while its holder changed the
    thread finds another version once it has the lock, and writes nothing (the round opens again);
    when the holder changed nothing, it writes the round."""
    holder = {**CHANGES, "nothing": lambda conn: None}[change]
    answer, entries = await _committed_after_a_wait(template, holder)
    if change == "nothing":
        assert isinstance(answer, Recorded) and answer.event_id > 0
        assert entries == ["n1"]
    else:
        assert answer == Conflict()
        assert entries == []


@pytest.mark.parametrize("change", sorted(CHANGES))
async def test_the_append_lock_that_waited_for_a_change_reads_the_turn_again(change, template):
    """The append's first statement waited for the thread's lock while its holder changed the
    thread: the turn's entries and calls it answers are those committed, as a statement after the
    lock reads them."""
    holder = CHANGES[change]
    answer, after = await _read_while_held(template, holder, _lock_and_turn, "t", "u2", ["c1"])
    assert answer == after
    model, (record, entries, _, _) = answer
    expected = {"complete": ["e3", "e4"], "append": ["e3", "e4", "e20"], "summary": ["e3", "e4"]}[change]
    assert [entry.entry_id for entry in entries] == expected
    done = change == "complete"
    assert record.status == (
        history_pb2.TURN_STATUS_COMPLETED if done else history_pb2.TURN_STATUS_IN_PROGRESS
    )
    assert model == "m"


@pytest.mark.parametrize("change", sorted(CHANGES))
async def test_the_append_lock_that_waited_for_a_change_leaves_the_batch_to_the_append(change, template):
    """The append's first statement, carrying the batch, waited for the thread's lock while its
    holder changed the thread: it inserts nothing (what it read predates that commit), the
    append's own statement inserts the batch, and the thread counts it as opened."""
    holder = CHANGES[change]
    answer, _ = await _read_while_held(template, holder, _appended_and_counted, "t", _ASKED)
    opened = {"complete": (1, 1), "append": (4, 2), "summary": (3, 2)}[change]
    assert answer == (False, ["n1"], opened)


def _appended_and_counted(conn: Connection, thread_id: str, new: list[NewEntry]) -> Any:
    """Whether the lock's statement inserted the batch, the entries created, the thread's open
    entries and turns after."""
    batch = append.batch_of("default", thread_id, new, "cl100k_base")
    _, turn, inserted = PG.lock_thread_and_turn(conn, thread_id, "r1", [], batch, "m", False)
    insert = functools.partial(PG.inserted, conn)
    created = append.append_rows(
        conn,
        "default",
        thread_id,
        {"r1": turn.record},
        batch,
        lambda _: None,
        insert,
        {"r1": turn.entries},
        {},
        inserted,
    )
    counts = conn.execute(
        text("SELECT open_entries, open_turns FROM threads WHERE thread_id = :t"), {"t": thread_id}
    ).one()
    return inserted is not None, [row["entry_id"] for _, row in created], tuple(counts)


def _inserted_by_the_lock(conn: Connection, new: list[NewEntry], counted_model: str) -> dict[str, int] | None:
    entries = [n.entry for n in new]
    batch = append.batch_of("default", "t", new, "cl100k_base")
    return PG.lock_thread_and_turn(conn, "t", entries[0].turn_id, [], batch, counted_model, False)[2]


async def test_the_lock_inserts_a_batch_counted_for_the_thread_model_only(template):
    """The equality above holds whichever statement inserts: the lock's does for a batch counted
    for the thread's model (its sequences answered), and leaves one counted for another to the
    append (the tokens would be another tokenizer's)."""
    answers, tables = await _run_on_copy(
        template, _inserted_by_the_lock, [(_ASKED, "m"), (_new(("n6", "r2", {"role": USER})), "other")]
    )
    assert answers == [{"n1": 5}, None]
    assert [row[2] for row in tables["conversation_entries"]] == ["e1", "e2", "e3", "e4", "n1"]


def _completed_by_the_lock(conn: Connection, turn_id: str, new: list[NewEntry], counted_model: str) -> Any:
    """What the lock's statement completing the turn answers: what it created, how many entries it
    completed (None: it left the completion to the caller), the status it answers the turn with;
    then the turn's status and open entries, and the thread's counts."""
    batch = append.batch_of("default", "t", new, "cl100k_base")
    _, turn, inserted = PG.lock_thread_and_turn(conn, "t", turn_id, [], batch, counted_model, True)
    left = conn.execute(
        text(
            "SELECT status, (SELECT count(*) FROM conversation_entries"
            " WHERE thread_id = 't' AND turn_id = :u AND NOT completed) FROM turns"
            " WHERE thread_id = 't' AND turn_id = :u"
        ),
        {"u": turn_id},
    ).one()
    counts = conn.execute(
        text("SELECT open_entries, open_turns, completed_entries FROM threads WHERE thread_id = 't'")
    ).one()
    return inserted, turn.completed, turn.record.status, tuple(left), tuple(counts)


async def test_the_lock_completes_the_turn_when_it_inserts_the_batch(template):
    """The comparison above holds whichever statement completes: the lock's does when it inserts
    the batch (the turn's entries, those it held and those it created, completed and counted),
    and leaves it to the completion after the append when it does not insert: a batch counted for
    another model, a turn completed already."""
    runs = [
        ("u2", _CALLED, "m"),
        ("r2", _new(("n6", "r2", {"role": USER, "content": "z"})), "other"),
        ("u1", _new(("n4", "u1", {"role": USER, "content": "y"})), "m"),
    ]
    answers, _ = await _run_on_copy(template, _completed_by_the_lock, runs)
    assert answers == [
        ({"n2": 5, "n3": 6}, 4, IN_PROGRESS, (COMPLETED, 0), (0, 0, 4)),
        (None, None, IN_PROGRESS, (IN_PROGRESS, 0), (0, 0, 4)),
        (None, None, COMPLETED, (COMPLETED, 0), (0, 0, 4)),
    ]


def _completes_empty(conn: Connection) -> None:
    assert PG.completed_under_lock(conn, "t", "empty") == 0


async def test_the_lock_that_waited_for_a_turn_completed_without_entries_completes_nothing(template):
    """A turn completed without entries leaves the thread's row alone, so the lock's statement that
    waited for its completion reads as fresh; the turn's row itself answers that it is completed,
    and the statement inserts and completes nothing: the turn is answered completed, so the
    append after it refuses the batch, as for any completed turn."""
    new = _new(("n8", "empty", {"role": ASSISTANT, "content": "late"}))

    def locked(conn: Connection) -> Any:
        batch = append.batch_of("default", "t", new, "cl100k_base")
        _, turn, inserted = PG.lock_thread_and_turn(conn, "t", "empty", [], batch, "m", True)
        stored = conn.execute(text("SELECT count(*) FROM conversation_entries WHERE turn_id = 'empty'"))
        return inserted, turn.completed, turn.record.status, stored.scalar_one()

    answer, again = await _read_while_held(template, _completes_empty, locked)
    assert answer == again == (None, None, COMPLETED, 0)


def _creates_turn_x(conn: Connection) -> None:
    turns.lock_turn(conn, "default", "t", "x")


@pytest.mark.parametrize("change", sorted({**CHANGES, "create turn": _creates_turn_x}))
async def test_the_completion_that_waited_for_a_change_completes_what_was_committed(change, template):
    """The completion's one statement waited for the thread's lock while its holder changed the
    thread (or created the turn, which leaves the thread's row alone): it completes what the
    holder committed, as a completion after the lock does."""
    holder = {**CHANGES, "create turn": _creates_turn_x}[change]
    turn_id = "x" if change == "create turn" else "u2"
    answer, again = await _read_while_held(template, holder, _completed_and_left, "t", turn_id)
    count = {"append": 3, "create turn": 0}.get(change, 2)
    assert answer == again == (count, history_pb2.TURN_STATUS_COMPLETED, 0)


@pytest.mark.parametrize("change", sorted({**CHANGES, "create turn": _creates_turn_x}))
async def test_the_completion_alone_that_waited_for_a_change_writes_nothing(change, template):
    """CompleteTurn's statement alone (no transaction around it) that waited for the thread's lock
    while its holder changed the thread writes nothing and says so (None), leaving the turn as the
    holder did; a completion in a transaction then completes it."""
    holder = {**CHANGES, "create turn": _creates_turn_x}[change]
    turn_id = "x" if change == "create turn" else "u2"
    answer, again = await _read_while_held(template, holder, _alone_and_left, "t", turn_id, alone=True)
    left_open = {"append": 3, "complete": 0, "create turn": 0}.get(change, 2)
    status = COMPLETED if change == "complete" else IN_PROGRESS
    assert answer == (None, status, left_open)
    count = {"append": 3, "create turn": 0}.get(change, 2)
    assert again == (count, COMPLETED, 0)


def _alone_and_left(conn: Connection, thread_id: str, turn_id: str) -> tuple[int | None, int, int]:
    """`completed_alone`'s answer, then the turn's status and how many of its entries are open (a
    turn the statement did not complete is completed after, as CompleteTurn does)."""
    count = PG.completed_alone(conn, thread_id, turn_id)
    left = _left(conn, thread_id, turn_id)
    return count, *left


async def test_a_statement_alone_is_a_transaction_of_its_own(template):
    """`runner.alone` sends no BEGIN and no COMMIT: each of its statements is a transaction of its
    own, committed as it returns; CompleteTurn's statement alone completes a turn, says None for a
    turn it does not find, and NotFound for a thread."""
    async with _runner_on_copy(template) as (runner, raw):
        first, second = await runner.alone(
            lambda conn: (_TRANSACTION_ID.first(conn, {}).id, _TRANSACTION_ID.first(conn, {}).id)
        )
        assert first != second
        assert await runner.alone(lambda conn: PG.completed_alone(conn, "t", "u2")) == 2
        status = "SELECT status FROM turns WHERE thread_id = 't' AND turn_id = 'u2'"
        assert await raw.fetchval(status) == COMPLETED  # committed: another session sees it
        assert await runner.alone(lambda conn: PG.completed_alone(conn, "t", "u2")) == 2
        assert await runner.alone(lambda conn: PG.completed_alone(conn, "t", "nosuch")) is None
        with pytest.raises(NotFound):
            await runner.alone(lambda conn: PG.completed_alone(conn, "nosuch", "u1"))


def _completed_and_left(conn: Connection, thread_id: str, turn_id: str) -> tuple[int, int, int]:
    """`complete_turn_in`'s answer, then the turn's status and how many of its entries are open."""
    count = PG.complete_in(conn, thread_id, turn_id)
    return count, *_left(conn, thread_id, turn_id)


def _left(conn: Connection, thread_id: str, turn_id: str) -> tuple[int, int]:
    """The turn's status and how many of its entries are open."""
    params = {"t": thread_id, "u": turn_id}
    status = conn.execute(text("SELECT status FROM turns WHERE thread_id = :t AND turn_id = :u"), params)
    open_entries = conn.execute(
        text(
            "SELECT count(*) FROM conversation_entries"
            " WHERE thread_id = :t AND turn_id = :u AND NOT completed"
        ),
        params,
    )
    return status.scalar_one(), open_entries.scalar_one()


async def test_the_store_runs_each_statement_on_its_generic_plan(template):
    """The store's sessions never plan a prepared statement for its values (`plan_cache_mode`,
    store/engine.py): the history's state read runs on one plan from its first call, where
    PostgreSQL left to choose plans it anew at each call of the loop."""
    admin_url, name = await _copy(template)
    engine = engine_for(_on(admin_url, name))
    runner = TransactionRunner(engine)
    compiled = history_state._DIRECT._pg
    assert compiled is not None
    sql = compiled.sql

    def read_and_count(conn: Connection) -> Any:
        for after in (0, 1, history_state.NO_ENTRIES):
            history_state.history_read_in(conn, "default", "t", "u2", after)
        plans = text("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = :sql")
        return tuple(conn.execute(plans, {"sql": sql}).one())

    try:
        assert await runner.read(read_and_count) == (3, 0)
    finally:
        await runner.close()
        await engine.dispose()
        await _drop(admin_url, name)
