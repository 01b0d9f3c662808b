"""Dropping what a thread holds: an open turn (AbandonTurn) or the whole thread (DeleteThread).

Each runs in one transaction that first writes the thread's row: on PostgreSQL the row lock
orders it with appends and rounds of the thread (each writes that row first), on SQLite the
first statement being a write takes the write lock before any read. Every row is deleted
explicitly, children first: SQLite's foreign keys are not enforced, and the events, kept
rounds and round usage have none.

A delete may be conditional, checked under that lock: on the thread's etag (DeleteThread's,
AIP-154) or on its still being expired (the retention sweeper's: a thread written since the
sweeper listed it stays).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import LargeBinary, bindparam, cast, delete, func, select, text, update
from sqlalchemy.engine import Connection

from pioneer_grpc import reasons
from pioneer_grpc.errors import Aborted, FailedPrecondition
from pioneer_grpc.store.clock import as_utc, now
from pioneer_grpc.store.manifests import NOTIFY_CHANNEL
from pioneer_grpc.store.models import (
    EntryCountRow,
    EntryRow,
    ManifestEventRow,
    SummaryCountRow,
    SummaryRow,
    ThreadRow,
    ToolCallRow,
    TurnRow,
)
from pioneer_grpc.store.port import Expiry, Removed
from pioneer_grpc.store.rendered_rounds import RenderedRoundRow
from pioneer_grpc.store.round_usage import RoundUsageRow
from pioneer_grpc.store.section_texts import SectionTextRow
from pioneer_grpc.store.threads import thread_etag, thread_not_found, turn_not_found
from pioneer_grpc.v1 import history_pb2

COMPLETED = history_pb2.TURN_STATUS_COMPLETED


def of_thread(model: Any, tenant: str, thread_id: str) -> Any:
    """`model`'s rows of the thread `thread_id` of `tenant`."""
    return (model.thread_id == thread_id) & (model.tenant == tenant)


# Every table a thread's rows live in, children first, with how its rows of a thread (of a
# tenant) are named: tests/store/test_delete_thread.py checks a deleted thread leaves none in any table
# of the schema, so a table added without a line here fails it.
THREAD_ROWS: dict[str, Any] = {
    "entry_token_counts": lambda n, t: EntryCountRow.entry_sequence.in_(
        select(EntryRow.id).where(of_thread(EntryRow, n, t))
    ),
    "summary_token_counts": lambda n, t: SummaryCountRow.summary_id.in_(
        select(SummaryRow.id).where(of_thread(SummaryRow, n, t))
    ),
    "tool_calls": lambda n, t: of_thread(ToolCallRow, n, t),
    "conversation_entries": lambda n, t: of_thread(EntryRow, n, t),
    "thread_summaries": lambda n, t: of_thread(SummaryRow, n, t),
    "manifest_events": lambda n, t: of_thread(ManifestEventRow, n, t),
    "rendered_rounds": lambda n, t: of_thread(RenderedRoundRow, n, t),
    "round_usage": lambda n, t: of_thread(RoundUsageRow, n, t),
    "section_texts": lambda n, t: of_thread(SectionTextRow, n, t),
    "turns": lambda n, t: of_thread(TurnRow, n, t),
    "threads": lambda n, t: of_thread(ThreadRow, n, t),
}
_MODELS: dict[str, Any] = {
    "entry_token_counts": EntryCountRow,
    "summary_token_counts": SummaryCountRow,
    "tool_calls": ToolCallRow,
    "conversation_entries": EntryRow,
    "thread_summaries": SummaryRow,
    "manifest_events": ManifestEventRow,
    "rendered_rounds": RenderedRoundRow,
    "round_usage": RoundUsageRow,
    "section_texts": SectionTextRow,
    "turns": TurnRow,
    "threads": ThreadRow,
}


def _touch(conn: Connection, tenant: str, thread_id: str) -> bool:
    """Writes the thread's row (the lock); whether it exists."""
    touched = conn.execute(
        update(ThreadRow).where(of_thread(ThreadRow, tenant, thread_id)).values(updated_at=now())
    )
    return bool(touched.rowcount)


# The first statement of a delete: a write that changes nothing (the lock), returning what its
# conditions look at.
_LOCK = (
    update(ThreadRow)
    .values(updated_at=ThreadRow.updated_at)
    .returning(ThreadRow.created_at, ThreadRow.updated_at, ThreadRow.retention_days)
)
_ENTRY_COUNT = select(func.count()).select_from(EntryRow)


def delete_thread_in(
    conn: Connection, tenant: str, thread_id: str, etag: str = "", expiry: Expiry | None = None
) -> Removed | None:
    """Deletes the thread and every row stored for it: what it removed, None when there was no such
    thread or (with `expiry`) it is not expired. Aborted ETAG_MISMATCH, deleting nothing, when `etag`
    is given and is not the thread's."""
    row = conn.execute(_LOCK.where(of_thread(ThreadRow, tenant, thread_id))).first()
    if row is None:
        return None
    updated = as_utc(row.updated_at)
    if expiry is not None and not expiry.expired(updated, row.retention_days):
        return None
    if etag:
        entries = conn.execute(_ENTRY_COUNT.where(of_thread(EntryRow, tenant, thread_id))).scalar_one()
        if etag != thread_etag(as_utc(row.created_at), updated, int(entries)):
            raise Aborted(
                f"thread {thread_id!r} changed since its etag {etag!r} was read; nothing was deleted: "
                "read it again (GetThread) and decide again",
                reason=reasons.ETAG_MISMATCH,
                metadata={"thread_id": thread_id},
            )
    by_thread = {"b_tenant": tenant, "b_thread_id": thread_id}
    postgres = conn.dialect.name == "postgresql"
    removed = Removed(int(conn.execute(_STORED_BYTES[postgres], by_thread).scalar_one()))
    for statement in _DELETES.values():
        conn.execute(statement, by_thread)
    if postgres:
        # Wakes every replica's hub at the commit (no event id: each reads what is new, and ends the
        # watches of the thread, events/hub.py `_end_deleted`).
        conn.execute(text("SELECT pg_notify(:channel, '')"), {"channel": NOTIFY_CHANNEL})
    return removed


def _stored_bytes(postgres: bool) -> Any:
    """Bytes of what the thread `:b_thread_id` of `:b_tenant` holds, one row: its entries' content, summaries,
    manifests and their events, kept rounds (UTF-8 for text; rows' keys and counts aside)."""

    def size(column: Any) -> Any:
        return func.octet_length(column) if postgres else func.length(cast(column, LargeBinary))

    def total(of_thread: Any, *columns: Any) -> Any:
        summed = sum((func.coalesce(size(column), 0) for column in columns[1:]), size(columns[0]))
        return select(func.coalesce(func.sum(summed), 0)).where(of_thread).scalar_subquery()

    tenant: Any = bindparam("b_tenant")
    thread_id: Any = bindparam("b_thread_id")
    entries = (
        EntryRow.content,
        EntryRow.tool_calls_json,
        EntryRow.artifact_refs_json,
        EntryRow.reasoning_content,
        EntryRow.content_parts_pb,
    )
    return select(
        total(of_thread(EntryRow, tenant, thread_id), *entries)
        + total(of_thread(SummaryRow, tenant, thread_id), SummaryRow.text)
        + total(of_thread(TurnRow, tenant, thread_id), TurnRow.prompt_manifest_json)
        + total(of_thread(ManifestEventRow, tenant, thread_id), ManifestEventRow.manifest_pb)
        + total(of_thread(RenderedRoundRow, tenant, thread_id), RenderedRoundRow.round_pb)
    )


# Built once: each delete runs them all, the sweeper thousands of times.
_STORED_BYTES = {postgres: _stored_bytes(postgres) for postgres in (False, True)}
_DELETES = {
    table: delete(_MODELS[table]).where(where(bindparam("b_tenant"), bindparam("b_thread_id")))
    for table, where in THREAD_ROWS.items()
}


def abandon_turn_in(
    conn: Connection, tenant: str, thread_id: str, turn_id: str, allow_missing: bool
) -> int | None:
    """Drops the open turn: its entries (their calls and counts), its row with its manifest, its
    events and kept rounds; the thread's open counts follow. How many entries it had; None when
    the turn does not exist and `allow_missing`."""
    if not _touch(conn, tenant, thread_id):
        raise thread_not_found(thread_id)
    status = conn.execute(
        select(TurnRow.status).where(of_thread(TurnRow, tenant, thread_id), TurnRow.turn_id == turn_id)
    ).scalar()
    if status is None:
        if allow_missing:
            return None
        raise turn_not_found(thread_id, turn_id)
    if status == COMPLETED:
        raise FailedPrecondition(
            f"turn {turn_id!r} of thread {thread_id!r} is completed: it is history, never dropped",
            reason=reasons.TURN_COMPLETED,
            metadata={"thread_id": thread_id, "turn_id": turn_id},
        )
    of_turn = (of_thread(EntryRow, tenant, thread_id), EntryRow.turn_id == turn_id)
    entry_ids = select(EntryRow.entry_id).where(*of_turn)
    conn.execute(
        delete(EntryCountRow).where(EntryCountRow.entry_sequence.in_(select(EntryRow.id).where(*of_turn)))
    )
    conn.execute(
        delete(ToolCallRow).where(
            of_thread(ToolCallRow, tenant, thread_id), ToolCallRow.entry_id.in_(entry_ids)
        )
    )
    dropped = conn.execute(delete(EntryRow).where(*of_turn)).rowcount
    conn.execute(
        delete(ManifestEventRow).where(
            of_thread(ManifestEventRow, tenant, thread_id), ManifestEventRow.turn_id == turn_id
        )
    )
    conn.execute(
        delete(RenderedRoundRow).where(
            of_thread(RenderedRoundRow, tenant, thread_id), RenderedRoundRow.turn_id == turn_id
        )
    )
    conn.execute(
        delete(RoundUsageRow).where(
            of_thread(RoundUsageRow, tenant, thread_id), RoundUsageRow.turn_id == turn_id
        )
    )
    conn.execute(delete(TurnRow).where(of_thread(TurnRow, tenant, thread_id), TurnRow.turn_id == turn_id))
    if dropped:
        conn.execute(
            update(ThreadRow)
            .where(of_thread(ThreadRow, tenant, thread_id))
            .values(open_entries=ThreadRow.open_entries - dropped, open_turns=ThreadRow.open_turns - 1)
        )
    return int(dropped)
