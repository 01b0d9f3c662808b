"""Keyset pages of threads, turns and entries: each page starts after the last item of the previous.

Ordering keys never change once written (thread ids, a turn's creation time and
id, an entry's sequence), so paging through a growing list shows every item that
existed at the start exactly once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import String, and_, bindparam, func, or_, select, tuple_
from sqlalchemy.engine import Connection

from pioneer_grpc.store.clock import as_utc
from pioneer_grpc.store.entries import ENTRY_COLUMNS, entry_message
from pioneer_grpc.store.models import EntryRow, ThreadRow, TurnRow
from pioneer_grpc.store.port import ThreadFilter, TimeOrder
from pioneer_grpc.store.round_usage import RoundUsageRow
from pioneer_grpc.store.threads import thread_message, thread_not_found
from pioneer_grpc.v1 import history_pb2


def _entry_count() -> Any:
    return (
        select(func.count())
        .where(EntryRow.thread_id == ThreadRow.thread_id, EntryRow.tenant == ThreadRow.tenant)
        .scalar_subquery()
    )


def _like(text: str) -> str:
    """A LIKE pattern matching `text` anywhere, its own % _ and \\ taken literally."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


_COMPARE: dict[str, Any] = {
    "<": lambda column, value: column < value,
    "<=": lambda column, value: column <= value,
    ">": lambda column, value: column > value,
    ">=": lambda column, value: column >= value,
}


def _matching(query: Any, where: ThreadFilter | None) -> Any:
    """`query` narrowed to the threads `where` asks for (ListThreads' filter)."""
    if where is None:
        return query
    for text in where.id_contains:
        # PostgreSQL serves a substring from the trigram index ix_threads_id_trgm when the pattern
        # is in the statement: the store's sessions run generic plans (store/engine.py), and a
        # generic plan of `LIKE $1` walked every thread in the page's order (25-80 ms over
        # 100,000). SQLite walks the order index and tests the ids. The value is rendered as an
        # escaped SQL literal.
        pattern = bindparam(None, _like(text), type_=String, literal_execute=True)
        query = query.where(ThreadRow.thread_id.like(pattern, escape="\\"))
    if where.model is not None:
        query = query.where(ThreadRow.model == where.model)
    for op, moment in where.updated:
        query = query.where(_COMPARE[op](ThreadRow.updated_at, moment))
    if where.has_cache_breaks is not None:
        # Served by the partial index ix_round_usage_breaks (rounds whose prefix broke).
        broke = (
            select(RoundUsageRow.thread_id)
            .where(
                RoundUsageRow.thread_id == ThreadRow.thread_id,
                RoundUsageRow.tenant == ThreadRow.tenant,
                RoundUsageRow.break_cause != 0,
            )
            .exists()
        )
        query = query.where(broke if where.has_cache_breaks else ~broke)
    return query


def _threads(
    conn: Connection, query: Any, tenant: str | None, where: ThreadFilter | None, size: int
) -> tuple[list[history_pb2.Thread], bool]:
    if tenant is not None:
        query = query.where(ThreadRow.tenant == tenant)
    rows = conn.execute(_matching(query, where).limit(size + 1)).all()
    return [thread_message(row, row.entries) for row in rows[:size]], len(rows) > size


def _selected() -> Any:
    return select(*ThreadRow.__table__.columns, _entry_count().label("entries"))


def threads_page(
    conn: Connection,
    tenant: str | None,
    after: tuple[str, str] | None,
    size: int,
    where: ThreadFilter | None = None,
) -> tuple[list[history_pb2.Thread], bool]:
    """`tenant`'s threads (None: every tenant's) by (id, tenant) after `after`, and whether more follow."""
    query = _selected().order_by(ThreadRow.thread_id, ThreadRow.tenant)
    if after is not None:
        query = query.where(tuple_(ThreadRow.thread_id, ThreadRow.tenant) > tuple_(*after))
    return _threads(conn, query, tenant, where, size)


def threads_by_time_page(
    conn: Connection,
    tenant: str | None,
    by: TimeOrder,
    after: tuple[datetime, str, str] | None,
    size: int,
    where: ThreadFilter | None = None,
) -> tuple[list[history_pb2.Thread], bool]:
    """`tenant`'s threads (None: every tenant's) latest first by (the `by` time, thread id, tenant)
    descending, after `after`."""
    moment = ThreadRow.created_at if by == "created" else ThreadRow.updated_at
    query = _selected().order_by(moment.desc(), ThreadRow.thread_id.desc(), ThreadRow.tenant.desc())
    if after is not None:
        # A row comparison, which SQLite and PostgreSQL both answer as a seek into
        # ix_threads_created_at or ix_threads_updated_at (the OR of two conditions was a filter
        # over the rows before it).
        query = query.where(tuple_(moment, ThreadRow.thread_id, ThreadRow.tenant) < tuple_(*after))
    return _threads(conn, query, tenant, where, size)


def _require_thread(conn: Connection, tenant: str, thread_id: str) -> None:
    of_thread = (ThreadRow.thread_id == thread_id) & (ThreadRow.tenant == tenant)
    if conn.execute(select(ThreadRow.thread_id).where(of_thread)).first() is None:
        raise thread_not_found(thread_id)


def turn_message(row: Any) -> history_pb2.Turn:
    turn = history_pb2.Turn(
        thread_id=row.thread_id,
        turn_id=row.turn_id,
        status=row.status,
        entry_count=row.entries,
        manifest_event_id=row.manifest_event_id or 0,
    )
    turn.create_time.FromDatetime(as_utc(row.created_at))
    turn.update_time.FromDatetime(as_utc(row.updated_at))
    return turn


def turns_page(
    conn: Connection, tenant: str, thread_id: str, after: tuple[datetime, str] | None, size: int
) -> tuple[list[history_pb2.Turn], bool]:
    """A thread's turns by (creation time, turn id) after `after`, and whether more follow."""
    _require_thread(conn, tenant, thread_id)
    count = (
        select(func.count())
        .where(
            EntryRow.thread_id == TurnRow.thread_id,
            EntryRow.tenant == TurnRow.tenant,
            EntryRow.turn_id == TurnRow.turn_id,
        )
        .scalar_subquery()
    )
    query = (
        select(
            TurnRow.thread_id,
            TurnRow.turn_id,
            TurnRow.status,
            TurnRow.manifest_event_id,
            TurnRow.created_at,
            TurnRow.updated_at,
            count.label("entries"),
        )
        .where(TurnRow.thread_id == thread_id, TurnRow.tenant == tenant)
        .order_by(TurnRow.created_at, TurnRow.turn_id)
        .limit(size + 1)
    )
    if after is not None:
        moment, turn_id = after
        query = query.where(
            or_(TurnRow.created_at > moment, and_(TurnRow.created_at == moment, TurnRow.turn_id > turn_id))
        )
    rows = conn.execute(query).all()
    return [turn_message(row) for row in rows[:size]], len(rows) > size


def entries_page(
    conn: Connection, tenant: str, thread_id: str, turn_id: str, after_sequence: int, size: int
) -> tuple[list[history_pb2.ConversationEntry], bool]:
    """A thread's entries (of one turn, when named) by sequence after `after_sequence`."""
    _require_thread(conn, tenant, thread_id)
    query = (
        select(*ENTRY_COLUMNS)
        .where(EntryRow.thread_id == thread_id, EntryRow.tenant == tenant, EntryRow.id > after_sequence)
        .order_by(EntryRow.id)
        .limit(size + 1)
    )
    if turn_id:
        query = query.where(EntryRow.turn_id == turn_id)
    rows = conn.execute(query).all()
    return [entry_message(row) for row in rows[:size]], len(rows) > size
