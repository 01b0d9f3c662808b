"""Each round's provider usage (reported by the loop) beside what the server expected of its body.

One row per round, replaced when the same round is reported again (a retried call). Every worker
and every restart reads the same rows: the round's prefix break is kept here for that reason too.
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
    delete,
    func,
    insert,
    select,
    text,
)
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Mapped, mapped_column

from pioneer_grpc.store.models import Base, Id, tenant_column
from pioneer_grpc.store.port import RoundUsageRecord


class RoundUsageRow(Base):
    __tablename__ = "round_usage"
    __table_args__ = (
        Index("ix_round_usage_round", "thread_id", "turn_id", "manifest_event_id", "turn_message_count"),
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
    input_tokens: Mapped[int] = mapped_column(BigInteger)
    cache_read_input_tokens: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    cache_write_input_tokens: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    output_tokens: Mapped[int] = mapped_column(BigInteger)
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
    reported_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # A JSON array of entry ids; "" for none.
    break_entry_ids: Mapped[str] = mapped_column(Text, default="", server_default="")
    break_entry_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    history_decision: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


_FIELDS = tuple(f.name for f in fields(RoundUsageRecord))


def record(conn: Connection, tenant: str, usage: RoundUsageRecord) -> None:
    """Replaces the round's row (if any) with `usage`, in the caller's transaction."""
    conn.execute(
        delete(RoundUsageRow).where(
            RoundUsageRow.thread_id == usage.thread_id,
            RoundUsageRow.tenant == tenant,
            RoundUsageRow.turn_id == usage.turn_id,
            RoundUsageRow.manifest_event_id == usage.manifest_event_id,
            RoundUsageRow.turn_message_count == usage.turn_message_count,
        )
    )
    values = asdict(usage)
    values["break_entry_ids"] = json.dumps(list(usage.break_entry_ids)) if usage.break_entry_ids else ""
    conn.execute(insert(RoundUsageRow).values(**values, tenant=tenant))


def thread_rounds(conn: Connection, tenant: str, thread_id: str, limit: int) -> list[RoundUsageRecord]:
    columns = [getattr(RoundUsageRow, name) for name in _FIELDS]
    rows = conn.execute(
        select(*columns)
        .where(RoundUsageRow.thread_id == thread_id, RoundUsageRow.tenant == tenant)
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
    """The thread's rounds after round `after_round` (numbered from 1 in report order), at most
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
