"""`Direct` runs a statement on SQLite's driver and gives the rows SQLAlchemy would give."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import bindparam, create_engine, select

from pioneer_grpc.store.driver import Direct
from pioneer_grpc.store.models import Base, EntryRow, ThreadRow
from pioneer_grpc.store.round import _TURN_ENTRIES


def test_rows_on_the_driver_are_the_rows_sqlalchemy_reads(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    Base.metadata.create_all(engine)
    moment = datetime(2026, 11, 30, tzinfo=UTC)
    with engine.begin() as conn:
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
        params = {"thread_id": "t", "turn_id": "u"}
        direct = _TURN_ENTRIES.rows(conn, params)
        through = conn.execute(_TURN_ENTRIES.statement, params).all()
    assert [tuple(row) for row in direct] == [tuple(row) for row in through]
    assert [row.entry_id for row in direct] == ["e0", "e1", "e2"]
    engine.dispose()


def test_a_statement_whose_values_are_converted_is_refused():
    with pytest.raises(ValueError, match="created_at"):
        Direct(select(EntryRow.created_at).where(EntryRow.thread_id == bindparam("thread_id")))
