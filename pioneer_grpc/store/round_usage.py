"""Each round's provider usage (reported by the loop) beside what the server expected of its body.

One row per round, replaced when the same round is reported again (a retried call). Every worker
and every restart reads the same rows: the round's prefix break is kept here for that reason too.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from datetime import datetime

from sqlalchemy import BigInteger, DateTime, Float, Index, Integer, String, delete, insert, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Mapped, mapped_column

from pioneer_grpc.store.models import Base, Id, tenant_column
from pioneer_grpc.store.port import RoundUsageRecord


class RoundUsageRow(Base):
    __tablename__ = "round_usage"
    __table_args__ = (
        Index("ix_round_usage_round", "thread_id", "turn_id", "manifest_event_id", "turn_message_count"),
        Index("ix_round_usage_thread", "thread_id", "id"),
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
    conn.execute(insert(RoundUsageRow).values(**asdict(usage), tenant=tenant))


def thread_rounds(conn: Connection, tenant: str, thread_id: str, limit: int) -> list[RoundUsageRecord]:
    columns = [getattr(RoundUsageRow, name) for name in _FIELDS]
    rows = conn.execute(
        select(*columns)
        .where(RoundUsageRow.thread_id == thread_id, RoundUsageRow.tenant == tenant)
        .order_by(RoundUsageRow.id.desc())
        .limit(limit)
    )
    return [RoundUsageRecord(**dict(zip(_FIELDS, row, strict=True))) for row in rows]
