"""Thread summaries: append-only; the newest one is the one in use."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncSession

from pioneer_grpc.store.clock import as_utc, now
from pioneer_grpc.store.models import SummaryRow
from pioneer_grpc.v1 import history_pb2


async def latest_summary(session: AsyncSession, thread_id: str) -> SummaryRow | None:
    result = await session.execute(
        select(SummaryRow).where(SummaryRow.thread_id == thread_id).order_by(SummaryRow.id.desc()).limit(1)
    )
    return result.scalar_one_or_none()


def summary_by_id_in(conn: Connection, summary_id: int) -> Any:
    """The summary row `summary_id`, in the caller's unit of work (store/runner.py)."""
    return conn.execute(select(*SummaryRow.__table__.columns).where(SummaryRow.id == summary_id)).one()


async def add_summary(
    session: AsyncSession,
    thread_id: str,
    text: str,
    token_count: int,
    covers_through_entry_id: str,
    covers_through_sequence: int,
    model: str,
    summarizer: str,
    tokenizer: str,
) -> SummaryRow:
    row = SummaryRow(
        thread_id=thread_id,
        tokenizer=tokenizer,
        text=text,
        token_count=token_count,
        covers_through_entry_id=covers_through_entry_id,
        covers_through_sequence=covers_through_sequence,
        model=model,
        summarizer=summarizer,
        created_at=now(),
    )
    async with session.begin():
        session.add(row)
    return row


def summary_message(row: SummaryRow) -> history_pb2.ThreadSummary:
    summary = history_pb2.ThreadSummary(
        thread_id=row.thread_id,
        text=row.text,
        covers_through_entry_id=row.covers_through_entry_id,
        covers_through_sequence=row.covers_through_sequence,
        token_count=row.token_count,
        model=row.model,
        summarizer=row.summarizer,
    )
    summary.create_time.FromDatetime(as_utc(row.created_at))
    return summary
