"""Keyset pages of threads, turns and entries: each page starts after the last item of the previous.

Ordering keys never change once written (thread ids, a turn's creation time and
id, an entry's sequence), so paging through a growing list shows every item that
existed at the start exactly once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select, tuple_
from sqlalchemy.engine import Connection

from pioneer_grpc.store.clock import as_utc
from pioneer_grpc.store.entries import ENTRY_COLUMNS, entry_message
from pioneer_grpc.store.models import EntryRow, ThreadRow, TurnRow
from pioneer_grpc.store.threads import thread_message, thread_not_found
from pioneer_grpc.v1 import history_pb2


def _entry_count() -> Any:
    return (
        select(func.count())
        .where(EntryRow.thread_id == ThreadRow.thread_id, EntryRow.tenant == ThreadRow.tenant)
        .scalar_subquery()
    )


def threads_page(
    conn: Connection, tenant: str | None, after: tuple[str, str] | None, size: int
) -> tuple[list[history_pb2.Thread], bool]:
    """`tenant`'s threads (None: every tenant's) by (id, tenant) after `after`, and whether more follow."""
    query = (
        select(*ThreadRow.__table__.columns, _entry_count().label("entries"))
        .order_by(ThreadRow.thread_id, ThreadRow.tenant)
        .limit(size + 1)
    )
    if tenant is not None:
        query = query.where(ThreadRow.tenant == tenant)
    if after is not None:
        query = query.where(tuple_(ThreadRow.thread_id, ThreadRow.tenant) > tuple_(*after))
    rows = conn.execute(query).all()
    return [thread_message(row, row.entries) for row in rows[:size]], len(rows) > size


def threads_newest_page(
    conn: Connection, tenant: str | None, after: tuple[datetime, str, str] | None, size: int
) -> tuple[list[history_pb2.Thread], bool]:
    """`tenant`'s threads (None: every tenant's) newest first, by (creation time, thread id, tenant)
    descending, after `after`."""
    query = (
        select(*ThreadRow.__table__.columns, _entry_count().label("entries"))
        .order_by(ThreadRow.created_at.desc(), ThreadRow.thread_id.desc(), ThreadRow.tenant.desc())
        .limit(size + 1)
    )
    if tenant is not None:
        query = query.where(ThreadRow.tenant == tenant)
    if after is not None:
        # A row comparison, which SQLite and PostgreSQL both answer as a seek into
        # ix_threads_created_at (the OR of two conditions was a filter over the rows before it).
        query = query.where(
            tuple_(ThreadRow.created_at, ThreadRow.thread_id, ThreadRow.tenant) < tuple_(*after)
        )
    rows = conn.execute(query).all()
    return [thread_message(row, row.entries) for row in rows[:size]], len(rows) > size


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
