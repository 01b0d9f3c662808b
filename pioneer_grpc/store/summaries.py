"""Thread summaries: append-only; the newest one is the one in use.

A summary is stored by the compaction's unit of work (service/history_compaction.py),
run by the store's runner.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, insert, select
from sqlalchemy.engine import Connection

from pioneer_grpc.store.clock import as_utc, now
from pioneer_grpc.store.models import SummaryRow
from pioneer_grpc.v1 import history_pb2

_LATEST = (
    select(*SummaryRow.__table__.columns)
    .where(SummaryRow.thread_id == bindparam("b_thread_id"), SummaryRow.tenant == bindparam("b_tenant"))
    .order_by(SummaryRow.id.desc())
    .limit(1)
)


def latest_summary_in(conn: Connection, tenant: str, thread_id: str) -> Any:
    """The thread's newest summary row, or None."""
    return conn.execute(_LATEST, {"b_thread_id": thread_id, "b_tenant": tenant}).first()


def summary_by_id_in(conn: Connection, summary_id: int) -> Any:
    """The summary row `summary_id`, in the caller's unit of work (store/runner.py)."""
    return conn.execute(select(*SummaryRow.__table__.columns).where(SummaryRow.id == summary_id)).one()


def add_summary_in(
    conn: Connection,
    tenant: str,
    thread_id: str,
    text: str,
    token_count: int,
    covers_through_entry_id: str,
    covers_through_sequence: int,
    model: str,
    summarizer: str,
    tokenizer: str,
) -> int:
    """Stores a summary in the caller's unit of work (store/runner.py); returns its id."""
    values = {
        "thread_id": thread_id,
        "tenant": tenant,
        "tokenizer": tokenizer,
        "text": text,
        "token_count": token_count,
        "covers_through_entry_id": covers_through_entry_id,
        "covers_through_sequence": covers_through_sequence,
        "model": model,
        "summarizer": summarizer,
        "created_at": now(),
    }
    return int(conn.execute(insert(SummaryRow).values(values).returning(SummaryRow.id)).scalar_one())


def summary_message(row: Any) -> history_pb2.ThreadSummary:
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
