"""Kept rendered rounds: what each PrepareTurn round sent, stored only when the server is asked to.

A table rather than memory: with `serve --workers N` a console page may land on
any worker, and every worker reads the one database. Each keep is one
transaction that also applies the bounds: rows past their age go, then the
thread's oldest beyond its count, then the oldest of all until the total bytes
fit. Keeps are serialized: two transactions that each summed the total before
the other committed would both see room and leave the total over its bound. On
PostgreSQL a transaction-scoped advisory lock, taken first, queues them (and
each then sums what the previous one committed); on SQLite the first statement,
a DELETE, takes the database's one write lock. Nothing here is ever logged.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    DateTime,
    Index,
    Integer,
    LargeBinary,
    String,
    delete,
    func,
    insert,
    select,
    text,
)
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Mapped, mapped_column

from pioneer_grpc.store.models import Base, Id, tenant_column
from pioneer_grpc.store.port import KeptRound, RenderedBounds

# Any constant of its own: the advisory lock every keep takes on PostgreSQL.
_KEEP_LOCK_KEY = 0x50494F4E4B455054


class RenderedRoundRow(Base):
    __tablename__ = "rendered_rounds"
    __table_args__ = (
        Index("ix_rendered_rounds_turn", "thread_id", "turn_id", "id"),
        Index("ix_rendered_rounds_created_at", "created_at"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    thread_id: Mapped[str] = mapped_column(String(200))
    tenant: Mapped[str] = tenant_column()
    turn_id: Mapped[str] = mapped_column(String(200))
    # 1, 2, ... within the turn, in the order the rounds were kept.
    round: Mapped[int] = mapped_column(Integer)
    manifest_event_id: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    kept_bytes: Mapped[int] = mapped_column(Integer)
    # Serialized pioneer.v1.RenderedRound (without round and create_time, which are columns).
    round_pb: Mapped[bytes] = mapped_column(LargeBinary)


def keep(
    conn: Connection,
    tenant: str,
    thread_id: str,
    turn_id: str,
    manifest_event_id: int,
    round_pb: bytes,
    moment: datetime,
    bounds: RenderedBounds,
) -> None:
    """Stores one round and applies the bounds, in the caller's transaction (which must be fresh)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _KEEP_LOCK_KEY})
    conn.execute(delete(RenderedRoundRow).where(RenderedRoundRow.created_at < moment - bounds.max_age))
    last = conn.scalar(
        select(func.max(RenderedRoundRow.round)).where(
            RenderedRoundRow.thread_id == thread_id,
            RenderedRoundRow.tenant == tenant,
            RenderedRoundRow.turn_id == turn_id,
        )
    )
    conn.execute(
        insert(RenderedRoundRow).values(
            thread_id=thread_id,
            tenant=tenant,
            turn_id=turn_id,
            round=(last or 0) + 1,
            manifest_event_id=manifest_event_id,
            created_at=moment,
            kept_bytes=len(round_pb),
            round_pb=round_pb,
        )
    )
    beyond = (
        select(RenderedRoundRow.id)
        .where(RenderedRoundRow.thread_id == thread_id, RenderedRoundRow.tenant == tenant)
        .order_by(RenderedRoundRow.id.desc())
        .offset(bounds.rounds_per_thread)
    )
    conn.execute(delete(RenderedRoundRow).where(RenderedRoundRow.id.in_(beyond.scalar_subquery())))
    total = conn.scalar(select(func.coalesce(func.sum(RenderedRoundRow.kept_bytes), 0)))
    if total is None or total <= bounds.total_bytes:
        return
    excess = total - bounds.total_bytes
    cutoff = None
    rows = conn.execute(
        select(RenderedRoundRow.id, RenderedRoundRow.kept_bytes).order_by(RenderedRoundRow.id)
    )
    for row_id, size in rows:
        cutoff = row_id
        excess -= size
        if excess <= 0:
            break
    if cutoff is not None:
        conn.execute(delete(RenderedRoundRow).where(RenderedRoundRow.id <= cutoff))


def turn_rounds(
    conn: Connection, tenant: str, thread_id: str, turn_id: str, not_before: datetime
) -> list[KeptRound]:
    """The turn's kept rounds, oldest first, younger than `not_before`."""
    rows = conn.execute(
        select(RenderedRoundRow.round, RenderedRoundRow.created_at, RenderedRoundRow.round_pb)
        .where(
            RenderedRoundRow.thread_id == thread_id,
            RenderedRoundRow.tenant == tenant,
            RenderedRoundRow.turn_id == turn_id,
            RenderedRoundRow.created_at >= not_before,
        )
        .order_by(RenderedRoundRow.id)
    )
    return [KeptRound(r.round, r.created_at, r.round_pb) for r in rows]


def total_bytes(conn: Connection) -> int:
    return int(conn.scalar(select(func.coalesce(func.sum(RenderedRoundRow.kept_bytes), 0))) or 0)
