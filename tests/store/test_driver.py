"""`Direct` runs a statement on SQLite's driver and gives the rows SQLAlchemy would give."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import pytest
from sqlalchemy import bindparam, create_engine, select
from sqlalchemy.dialects import sqlite

from pioneer_grpc.store.driver import Direct
from pioneer_grpc.store.models import Base, EntryRow, ThreadRow
from pioneer_grpc.store.sqlite import _INSERT_ENTRY as _INSERT_ENTRY_SQLITE
from pioneer_grpc.store.sqlite import _TURN_ENTRIES


def _insert_thread(conn, moment: datetime) -> None:
    conn.execute(
        ThreadRow.__table__.insert(),
        {
            "thread_id": "t",
            "max_context_tokens": 1,
            "response_reserve_tokens": 1,
            "created_at": moment,
            "updated_at": moment,
        },
    )


def test_rows_on_the_driver_are_the_rows_sqlalchemy_reads(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    Base.metadata.create_all(engine)
    moment = datetime(2026, 11, 30, tzinfo=UTC)
    with engine.begin() as conn:
        _insert_thread(conn, moment)
        conn.execute(
            EntryRow.__table__.insert(),
            [
                {
                    "thread_id": "t",
                    "entry_id": f"e{i}",
                    "turn_id": "u",
                    "role": 1,
                    "content": f"text {i}",
                    "tool_calls_json": "[]",
                    "tool_call_id": "",
                    "name": "",
                    "artifact_refs_json": "[]",
                    "content_hash": "h",
                    "token_count": i,
                    "tokenizer": "cl100k_base",
                    "completed": False,
                    "created_at": moment,
                }
                for i in range(3)
            ],
        )
        params = {"thread_id": "t", "tenant": "default", "turn_id": "u"}
        direct = _TURN_ENTRIES.rows(conn, params)
        through = conn.execute(_TURN_ENTRIES.statement, params).all()
    assert [tuple(row) for row in direct] == [tuple(row) for row in through]
    assert [row.entry_id for row in direct] == ["e0", "e1", "e2"]
    engine.dispose()


def test_a_statement_whose_values_are_converted_is_refused():
    with pytest.raises(ValueError, match="created_at"):
        Direct(select(EntryRow.created_at).where(EntryRow.thread_id == bindparam("thread_id")))


def _raw_rows(path, table):
    with sqlite3.connect(path) as raw:
        return raw.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()


def test_converted_parameters_are_written_as_sqlalchemy_writes_them(tmp_path):
    """A datetime, a boolean and bytes through `Direct` are stored as SQLAlchemy stores them."""
    moment = datetime(2026, 11, 30, 12, 34, 56, 789012, tzinfo=UTC)
    row = {
        "thread_id": "t",
        "entry_id": "e",
        "turn_id": "u",
        "role": 2,
        "content": "text",
        "tool_calls_json": "[]",
        "tool_call_id": "",
        "name": "",
        "artifact_refs_json": "[]",
        "reasoning_content": None,
        "content_parts_pb": b"\x00\xffparts",
        "is_error": True,
        "content_hash": "h",
        "token_count": 3,
        "tokenizer": "cl100k_base",
        "completed": False,
        "created_at": moment,
        "tenant": "default",
    }
    stored = []
    for way in ("sqlalchemy", "direct"):
        path = tmp_path / f"{way}.db"
        engine = create_engine(f"sqlite:///{path}")
        Base.metadata.create_all(engine)
        with engine.begin() as conn:
            _insert_thread(conn, moment)
            if way == "direct":
                returned = _INSERT_ENTRY_SQLITE.first(conn, row)
            else:
                returned = conn.execute(_INSERT_ENTRY_SQLITE.statement, row).one()
            assert (returned.id, returned.entry_id) == (1, "e")
            # The same entry again: nothing inserted, nothing returned, either way.
            again = (
                _INSERT_ENTRY_SQLITE.rows(conn, row)
                if way == "direct"
                else conn.execute(_INSERT_ENTRY_SQLITE.statement, row).all()
            )
            assert list(again) == []
        engine.dispose()
        stored.append(_raw_rows(path, "conversation_entries"))
    assert stored[0] == stored[1]
    assert "2026-11-30 12:34:56.789012" in stored[1][0]
    assert 0 in stored[1][0]  # completed, as SQLAlchemy writes False


def test_values_sqlalchemy_would_compute_or_expand_are_refused():
    # `content` has a Python-side default, which SQLAlchemy computes when a row leaves it out.
    with pytest.raises(ValueError, match="content"):
        Direct(sqlite.insert(EntryRow), column_keys=("thread_id", "entry_id"))
    with pytest.raises(ValueError, match="ids"):
        Direct(select(EntryRow.id).where(EntryRow.entry_id.in_(bindparam("ids", expanding=True))))
