"""A thread's rounds: each as its commit made it, and its provider usage (reported by the loop)
beside what the server expected of its body.

One row per round: the round's commit writes it (`prepared_in`: its time, provider, model, history
decision and prefix break; no usage yet), the same round committed again keeps it, and a report of
its usage fills it in (`record`), again when the same round is reported again (a retried call). A
round reported without a row (one this server did not prepare, or prepared before commits wrote
rows) gets a row of its own then. Every worker and every restart reads the same rows: the round's
prefix break is kept here for that reason too.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    DateTime,
    Float,
    Index,
    Integer,
    String,
    Text,
    func,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Mapped, mapped_column

from pioneer_grpc.store.clock import now
from pioneer_grpc.store.driver import SQLITE, Direct
from pioneer_grpc.store.models import Base, Id, tenant_column
from pioneer_grpc.store.port import RoundCommit, RoundPrepared, RoundUsageRecord


class RoundUsageRow(Base):
    __tablename__ = "round_usage"
    __table_args__ = (
        # One row per round (migration 0022): a commit inserts its round's row unless it is there.
        Index(
            "ix_round_usage_round",
            "thread_id",
            "turn_id",
            "manifest_event_id",
            "turn_message_count",
            "tenant",
            unique=True,
        ),
        Index("ix_round_usage_thread", "thread_id", "id"),
        # ListThreads' has_cache_breaks: the threads with a round whose prefix broke (migration 0020).
        Index(
            "ix_round_usage_breaks",
            "thread_id",
            sqlite_where=text("break_cause <> 0"),
            postgresql_where=text("break_cause <> 0"),
        ),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    thread_id: Mapped[str] = mapped_column(String(200))
    tenant: Mapped[str] = tenant_column()
    turn_id: Mapped[str] = mapped_column(String(200))
    manifest_event_id: Mapped[int] = mapped_column(BigInteger)
    turn_message_count: Mapped[int] = mapped_column(Integer)
    provider: Mapped[int] = mapped_column(Integer)
    model: Mapped[str] = mapped_column(String(200))
    # NULL (with output_tokens and reported_at): no usage reported for the round yet.
    input_tokens: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    cache_read_input_tokens: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    cache_write_input_tokens: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    output_tokens: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    reasoning_output_tokens: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    expected_input_tokens: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    expected_cache_read_input_tokens: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    expected_cache_write_input_tokens: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    expected_input_cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    reported_input_cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    break_cause: Mapped[int] = mapped_column(Integer)
    break_detail: Mapped[str] = mapped_column(String(200))
    break_tokens_invalidated: Mapped[int] = mapped_column(BigInteger)
    break_tokens_kept: Mapped[int] = mapped_column(BigInteger)
    reported_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # A JSON array of entry ids; "" for none.
    break_entry_ids: Mapped[str] = mapped_column(Text, default="", server_default="")
    break_entry_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    history_decision: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # When the round's commit wrote it; NULL for a round it did not (reported before migration 0022,
    # or prepared by no server that wrote rows).
    prepared_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


_FIELDS = tuple(f.name for f in fields(RoundUsageRecord))
_KEY = ("thread_id", "turn_id", "manifest_event_id", "turn_message_count")
# The unique index a commit's insert leaves a round's row alone on.
ROUND_INDEX = (*_KEY, "tenant")
# What a report fills into a round's row; its place, time, provider, model, decision and break stay.
REPORTED = (
    "input_tokens",
    "cache_read_input_tokens",
    "cache_write_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "expected_input_tokens",
    "expected_cache_read_input_tokens",
    "expected_cache_write_input_tokens",
    "expected_input_cost_usd",
    "reported_input_cost_usd",
    "reported_at",
)
# A round's row as its commit writes it: every column but the reported ones (and the row's id).
PREPARED_COLUMNS = tuple(
    column.name for column in RoundUsageRow.__table__.columns if column.name not in ("id", *REPORTED)
)
_INSERT_PREPARED = Direct(
    sqlite.insert(RoundUsageRow).on_conflict_do_nothing(index_elements=list(ROUND_INDEX)),
    column_keys=PREPARED_COLUMNS,
    dialects=(SQLITE,),
)


def _entry_ids(ids: tuple[str, ...]) -> str:
    return json.dumps(list(ids)) if ids else ""


def prepared_values(
    tenant: str, thread_id: str, turn_id: str, event_id: int, prepared: RoundPrepared, moment: datetime
) -> dict[str, Any]:
    """The round's row as its commit writes it (PREPARED_COLUMNS)."""
    return {
        "thread_id": thread_id,
        "tenant": tenant,
        "turn_id": turn_id,
        "manifest_event_id": event_id,
        "turn_message_count": prepared.turn_message_count,
        "provider": prepared.provider,
        "model": prepared.model,
        "history_decision": prepared.history_decision,
        "break_cause": prepared.break_cause,
        "break_detail": prepared.break_detail,
        "break_tokens_invalidated": prepared.break_tokens_invalidated,
        "break_tokens_kept": prepared.break_tokens_kept,
        "break_entry_ids": _entry_ids(prepared.break_entry_ids),
        "break_entry_count": prepared.break_entry_count,
        "prepared_at": moment,
    }


def prepared_in(conn: Connection, tenant: str, commit: RoundCommit, event_id: int) -> None:
    """The commit's round's row (none without `commit.round`), in the commit's transaction, with
    the turn's event id as committed (SQLite's final at once); nothing when the round has its row
    already (committed again)."""
    if commit.round is not None:
        values = prepared_values(tenant, commit.thread_id, commit.turn_id, event_id, commit.round, now())
        _INSERT_PREPARED.rows(conn, values)


def record(conn: Connection, tenant: str, usage: RoundUsageRecord) -> None:
    """`usage` into the round's row, else as a row of its own, in the caller's transaction."""
    values = asdict(usage)
    values["break_entry_ids"] = _entry_ids(usage.break_entry_ids)
    of_round = (getattr(RoundUsageRow, name) == values[name] for name in _KEY)
    filled = conn.execute(
        update(RoundUsageRow)
        .where(RoundUsageRow.tenant == tenant, *of_round)
        .values({name: values[name] for name in REPORTED})
    )
    if filled.rowcount == 0:
        conn.execute(insert(RoundUsageRow).values(**values, tenant=tenant))


def thread_rounds(conn: Connection, tenant: str, thread_id: str, limit: int) -> list[RoundUsageRecord]:
    columns = [getattr(RoundUsageRow, name) for name in _FIELDS]
    rows = conn.execute(
        select(*columns)
        .where(
            RoundUsageRow.thread_id == thread_id,
            RoundUsageRow.tenant == tenant,
            RoundUsageRow.reported_at.is_not(None),
        )
        .order_by(RoundUsageRow.id.desc())
        .limit(limit)
    )
    return [_record(row) for row in rows]


def _record(row: Any) -> RoundUsageRecord:
    values = dict(zip(_FIELDS, row, strict=True))
    values["break_entry_ids"] = tuple(json.loads(values["break_entry_ids"] or "[]"))
    return RoundUsageRecord(**values)


def timeline(
    conn: Connection, tenant: str, thread_id: str, after_round: int, limit: int, breaks_only: bool
) -> tuple[list[tuple[int, RoundUsageRecord]], int, int]:
    """The thread's rounds after round `after_round` (numbered from 1 in the order their rows were
    written: a committed round's at its commit, a round reported without one at its report), at most
    `limit`, only breaks when `breaks_only`; and the thread's rounds and breaks in all."""
    columns = [getattr(RoundUsageRow, name) for name in _FIELDS]
    numbered = (
        select(*columns, func.row_number().over(order_by=RoundUsageRow.id).label("round"))
        .where(RoundUsageRow.thread_id == thread_id, RoundUsageRow.tenant == tenant)
        .subquery()
    )
    query = select(numbered).where(numbered.c.round > after_round)
    if breaks_only:
        query = query.where(numbered.c.break_cause != 0)
    rows = conn.execute(query.order_by(numbered.c.round).limit(limit)).all()
    totals = conn.execute(
        select(func.count(), func.count().filter(RoundUsageRow.break_cause != 0)).where(
            RoundUsageRow.thread_id == thread_id, RoundUsageRow.tenant == tenant
        )
    ).one()
    found = [(int(row.round), _record(row[: len(_FIELDS)])) for row in rows]
    return found, int(totals[0]), int(totals[1])
