"""Every statement the store runs on SQLite's driver (`Direct`) gives the rows and leaves the database
SQLAlchemy's execution of the same statement gives and leaves (PostgreSQL's: test_postgres_statements.py).

Each case runs on two copies of one seeded database, once through `Direct` on the
sqlite3 connection and once through SQLAlchemy; the rows returned and every table
afterwards must be equal. A `Direct` statement without a case here fails the test.
"""

from __future__ import annotations

import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import bindparam, create_engine, select

from pioneer_grpc.store import history_state, manifests, sql, sqlite, turns
from pioneer_grpc.store.driver import SQLITE, Direct
from pioneer_grpc.store.entries import (
    HELD_COLUMNS,
    THREAD_CALLS_CHUNK,
    NewEntry,
    entry_values,
    held_entry,
    held_in,
    thread_calls_in,
)
from pioneer_grpc.store.models import Base, EntryRow, ThreadRow, ToolCallRow, TurnRow
from pioneer_grpc.v1 import history_pb2

MODULES = (sqlite, sql, turns, history_state, manifests)
MOMENT = datetime(2026, 11, 30, 12, 34, 56, 789012, tzinfo=UTC)
LATER = datetime(2026, 12, 1, 8, 0, 1, 5, tzinfo=UTC)
T = {"b_thread_id": "t"}


def _entry(entry_id: str, turn: str, completed: bool, **fields: Any) -> dict[str, Any]:
    values = entry_values(
        "t",
        NewEntry(history_pb2.ConversationEntry(entry_id=entry_id, turn_id=turn, role=1, **fields), "h", 3),
        "cl100k_base",
        MOMENT,
    )
    return {**values, "completed": completed}


def _new_entry(entry_id: str) -> dict[str, Any]:
    return _entry(entry_id, "u2", False, content="new")


# (module, name) -> the parameters of each run, in order, on the same database.
CASES: dict[tuple[str, str], list[dict[str, Any]]] = {
    ("sqlite", "_LOCK_THREAD"): [T, {"b_thread_id": "nosuch"}],
    ("sqlite", "_TOUCH_THREAD"): [{**T, "b_updated_at": LATER, "b_entries": 2, "b_turns": 1}],
    ("sqlite", "_INSERT_ENTRY"): [_new_entry("e9"), _new_entry("e9"), _new_entry("e1")],
    ("sqlite", "_INSERT_CALL"): [
        {"thread_id": "t", "call_id": "c9", "entry_id": "e3"},
        {"thread_id": "t", "call_id": "c1", "entry_id": "e3"},
    ],
    ("sqlite", "_TURN_ENTRIES"): [{"thread_id": "t", "turn_id": "u1"}, {"thread_id": "t", "turn_id": "x"}],
    ("sqlite", "_TURN_ROW"): [{"thread_id": "t", "turn_id": turn} for turn in ("u1", "u2", "x")],
    ("sqlite", "_VERSION"): [
        {"thread_id": thread, "turn_id": turn} for thread, turn in (("t", "u1"), ("t", "x"), ("nosuch", "u1"))
    ],
    ("turns", "_LOCK_TURN_SQLITE"): [
        {"thread_id": "t", "turn_id": turn, "status": 1, "created_at": LATER, "updated_at": LATER}
        for turn in ("u1", "new")
    ],
    ("history_state", "_DIRECT"): [
        {"thread_id": "t", "exclude_turn_id": exclude, "after": after}
        for exclude, after in (("", 0), ("u2", 1), ("u1", history_state.NO_ENTRIES), ("", 0))
    ]
    + [{"thread_id": "nosuch", "exclude_turn_id": "", "after": 0}],
    ("sqlite", "_TURN_STATUS"): [{**T, "b_turn_id": "u2"}, {**T, "b_turn_id": "x"}],
    ("sqlite", "_COMPLETE_TURN"): [
        {**T, "b_turn_id": turn, "b_status": history_pb2.TURN_STATUS_COMPLETED, "b_updated_at": LATER}
        for turn in ("u2", "u2", "x")
    ],
    ("sqlite", "_COMPLETE_ENTRIES"): [{**T, "b_turn_id": "u2"}, {**T, "b_turn_id": "x"}],
    ("sqlite", "_TURN_ENTRY_COUNT"): [{**T, "b_turn_id": "u1"}, {**T, "b_turn_id": "x"}],
    ("sqlite", "_LESS_OPEN"): [{**T, "b_entries": 1, "b_turns": 1}],
    ("manifests", "_INSERT_EVENT_SQLITE"): [
        {**T, "b_turn_id": "u2", "b_manifest_pb": b"\x08\x01", "b_created_at": LATER}
    ],
    ("manifests", "_UPDATE_TURN_SQLITE"): [
        {
            **T,
            "b_turn_id": "u2",
            "b_json": '{"a": 1}',
            "b_version": "v1",
            "b_profile": 1,
            "b_stable": "s",
            "b_dynamic": "d",
            "b_full": "f",
            "b_event_id": None,
            "b_updated_at": LATER,
        }
    ],
}
# Every statement names the thread's tenant beside its id.
for _runs in CASES.values():
    for _params in _runs:
        if "b_thread_id" in _params:
            _params["b_tenant"] = "default"
        if "thread_id" in _params:
            _params["tenant"] = "default"


def directs(dialect: str) -> dict[tuple[str, str], Direct]:
    """Every `Direct` of the store's modules compiled for `dialect`, by (module, name)."""
    found = {}
    for module in MODULES:
        short = module.__name__.rsplit(".", 1)[1]
        for name, value in vars(module).items():
            if isinstance(value, Direct) and dialect in value.dialects:
                found[short, name] = value
    return found


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("direct") / "seed.db"
    engine = create_engine(f"sqlite:///{path}")
    Base.metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(
            ThreadRow.__table__.insert(),
            {
                "thread_id": "t",
                "max_context_tokens": 1000,
                "response_reserve_tokens": 100,
                "model": "m",
                "open_entries": 1,
                "open_turns": 1,
                "created_at": MOMENT,
                "updated_at": MOMENT,
            },
        )
        conn.execute(
            TurnRow.__table__.insert(),
            [
                {
                    "thread_id": "t",
                    "turn_id": turn,
                    "status": status,
                    "created_at": MOMENT,
                    "updated_at": MOMENT,
                }
                for turn, status in (("u1", history_pb2.TURN_STATUS_COMPLETED), ("u2", 1))
            ],
        )
        conn.execute(
            EntryRow.__table__.insert(),
            [
                _entry("e1", "u1", True, content="q"),
                _entry("e2", "u1", True, content="a", reasoning_content="why"),
                _entry("e3", "u2", False, content="open"),
            ],
        )
        conn.execute(ToolCallRow.__table__.insert(), {"thread_id": "t", "call_id": "c1", "entry_id": "e2"})
    engine.dispose()
    return path


def _tables(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    with sqlite3.connect(path) as raw:
        names = [row[0] for row in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {name: raw.execute(f"SELECT * FROM {name} ORDER BY rowid").fetchall() for name in names}


def test_every_direct_statement_has_a_case():
    assert set(directs(SQLITE)) == set(CASES)


@pytest.mark.parametrize("case", sorted(CASES), ids=lambda case: ".".join(case))
def test_direct_gives_and_leaves_what_sqlalchemy_does(case, seeded, tmp_path):
    statement = directs(SQLITE)[case]
    results, tables = [], []
    for way in ("direct", "sqlalchemy"):
        path = tmp_path / f"{way}.db"
        shutil.copy(seeded, path)
        engine = create_engine(f"sqlite:///{path}")
        returned = []
        with engine.begin() as conn:
            for params in CASES[case]:
                if way == "direct":
                    rows = statement.rows(conn, params)
                else:
                    result = conn.execute(statement.statement, dict(params))
                    rows = list(result) if result.returns_rows else []
                returned.append([tuple(row) for row in rows])
        engine.dispose()
        results.append(returned)
        tables.append(_tables(path))
    assert results[0] == results[1]
    assert tables[0] == tables[1]


# The statement `thread_calls_in` replaced: one expanding IN list, run by SQLAlchemy.
_EXPANDING_THREAD_CALLS = (
    select(ToolCallRow.call_id, ToolCallRow.entry_id)
    .where(
        ToolCallRow.thread_id == bindparam("thread_id"),
        ToolCallRow.call_id.in_(bindparam("call_ids", expanding=True)),
    )
    .order_by(ToolCallRow.call_id, ToolCallRow.entry_id)
)


@pytest.mark.parametrize(
    "count", [1, 2, THREAD_CALLS_CHUNK, THREAD_CALLS_CHUNK + 1, 2 * THREAD_CALLS_CHUNK + 5]
)
def test_thread_calls_in_chunks_finds_what_one_expanding_statement_does(count, seeded, tmp_path):
    path = tmp_path / "calls.db"
    shutil.copy(seeded, path)
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        calls = [{"thread_id": "t", "call_id": f"c{n:03d}", "entry_id": f"e{n % 3 + 1}"} for n in range(200)]
        # A call id two entries made (the later entry id is the one a dict keeps), another thread's.
        calls += [
            {"thread_id": "t", "call_id": "c005", "entry_id": "e9"},
            {"thread_id": "other", "call_id": "c006", "entry_id": "e1"},
        ]
        conn.execute(ToolCallRow.__table__.insert(), calls)
    # Asked newest first, with an id no entry made and one id asked twice.
    known = [f"c{n:03d}" for n in range(count)]
    asked = [*reversed(known), "nosuch", known[0]]
    with engine.connect() as conn:
        found = thread_calls_in(conn, "default", "t", asked)
        rows = conn.execute(_EXPANDING_THREAD_CALLS, {"thread_id": "t", "call_ids": asked})
        expected = {row.call_id: row.entry_id for row in rows}
    engine.dispose()
    assert found == expected
    assert sorted(found) == known
    if count > 5:
        assert found["c005"] == "e9"


@pytest.mark.parametrize("count", [1, 2, THREAD_CALLS_CHUNK + 1])
def test_held_in_chunks_finds_what_one_expanding_statement_does(count, seeded, tmp_path):
    """The entries a round asks for (any turn), read a chunk of ids at a time on the driver: the rows
    one SQLAlchemy statement with an expanding IN list reads."""
    path = tmp_path / "held.db"
    shutil.copy(seeded, path)
    engine = create_engine(f"sqlite:///{path}")
    asked = [*(f"x{n}" for n in range(count - 1)), "e2", "e3", "e2"]
    expanding = select(*HELD_COLUMNS).where(
        EntryRow.thread_id == bindparam("thread_id"), EntryRow.entry_id.in_(bindparam("ids", expanding=True))
    )
    with engine.connect() as conn:
        found = held_in(conn, "default", "t", asked)
        expected = {
            row.entry_id: tuple(row) for row in conn.execute(expanding, {"thread_id": "t", "ids": asked})
        }
    engine.dispose()
    assert {entry_id: tuple(row) for entry_id, row in found.items()} == expected
    assert sorted(found) == ["e2", "e3"]
    assert held_entry(found["e2"]).reasoning_content == "why"
