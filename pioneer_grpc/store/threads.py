"""Thread rows: create, read (with the entry count), update, the compaction mark.

Each write is one unit of work run by the store's runner (store/runner.py): a
synchronous function of one connection, inside the caller's one transaction, on
the same statements for SQLite and PostgreSQL.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import LargeBinary, bindparam, cast, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from pioneer_grpc import reasons
from pioneer_grpc.errors import AlreadyExists, NotFound
from pioneer_grpc.store.clock import as_utc, now
from pioneer_grpc.store.models import EntryRow, ThreadRow
from pioneer_grpc.store.port import OPTIONAL_SETTINGS
from pioneer_grpc.v1 import history_pb2


@dataclass(frozen=True)
class ThreadSettings:
    max_context_tokens: int
    response_reserve_tokens: int
    model: str = ""
    summary_model: str = ""
    # pioneer.v1.CompactionStrategy; 0 means the default.
    compaction_strategy: int = 0
    # None means the default.
    keep_tool_results: int | None = None
    # Percent of the budget; None means the default.
    compaction_trigger_percent: int | None = None
    compaction_low_water_percent: int | None = None
    clear_at_least_percent: int | None = None
    # pioneer.v1.DynamicContextPlacement; 0 means the default.
    dynamic_context_placement: int = 0
    # None: the server's --retention-days; 0: never deleted by the sweeper.
    retention_days: int | None = None


def thread_not_found(thread_id: str) -> NotFound:
    return NotFound(
        f"thread {thread_id!r} does not exist",
        reason=reasons.THREAD_NOT_FOUND,
        metadata={"thread_id": thread_id},
    )


def turn_not_found(thread_id: str, turn_id: str) -> NotFound:
    return NotFound(
        f"turn {turn_id!r} does not exist in thread {thread_id!r}",
        reason=reasons.TURN_NOT_FOUND,
        metadata={"thread_id": thread_id, "turn_id": turn_id},
    )


_COLUMNS = tuple(ThreadRow.__table__.columns)
_BY_ID = (ThreadRow.thread_id == bindparam("b_thread_id")) & (ThreadRow.tenant == bindparam("b_tenant"))
_ENTRY_COUNT = (
    select(func.count())
    .select_from(EntryRow)
    .where(EntryRow.thread_id == ThreadRow.thread_id, EntryRow.tenant == ThreadRow.tenant)
    .scalar_subquery()
)
# The thread and how many entries it has: one statement, one snapshot.
_WITH_COUNT = select(*_COLUMNS, _ENTRY_COUNT.label("entry_count")).where(_BY_ID)
# The first statement of a thread's write: a write (SQLite's lock from the start), the row locked
# (PostgreSQL), the row as it is returned.
_LOCK = update(ThreadRow).where(_BY_ID).values(updated_at=ThreadRow.updated_at).returning(*_COLUMNS)


def _insert(conn: Connection) -> Any:
    """The dialect's INSERT of a thread that does nothing when the id is taken, returning the row."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    return (
        dialect.insert(ThreadRow)
        .on_conflict_do_nothing(index_elements=["thread_id", "tenant"])
        .returning(*_COLUMNS)
    )


def create_thread_in(
    conn: Connection, tenant: str, thread_id: str, settings: ThreadSettings
) -> tuple[Any, int]:
    """CreateThread's unit of work (store/runner.py): the thread row and its entry count.

    A taken id with the same settings answers the stored thread (a retried create);
    with other settings it is AlreadyExists naming the settings that differ. A
    concurrent creator of the same id is waited for (the unique key), then read.
    """
    moment = now()
    values = {
        "thread_id": thread_id,
        "tenant": tenant,
        **settings.__dict__,
        "created_at": moment,
        "updated_at": moment,
    }
    created = conn.execute(_insert(conn).values(values)).first()
    if created is not None:
        return created, 0
    stored = conn.execute(_WITH_COUNT, {"b_thread_id": thread_id, "b_tenant": tenant}).one()
    differing = [k for k, v in settings_of(stored).__dict__.items() if getattr(settings, k) != v]
    if differing:
        raise AlreadyExists(
            f"thread {thread_id!r} already exists with a different {', '.join(differing)}",
            reason=reasons.THREAD_CONFLICT,
            metadata={"thread_id": thread_id, "differing_fields": ",".join(differing)},
        )
    return stored, int(stored.entry_count)


def thread_in(conn: Connection, tenant: str, thread_id: str) -> tuple[Any, int]:
    """The thread row and its entry count (NotFound for an unknown thread): one statement."""
    row = conn.execute(_WITH_COUNT, {"b_thread_id": thread_id, "b_tenant": tenant}).first()
    if row is None:
        raise thread_not_found(thread_id)
    return row, int(row.entry_count)


def update_thread_if(
    tenant: str, thread_id: str, settings: ThreadSettings, expected: ThreadSettings, conn: Connection
) -> tuple[Any, int] | None:
    """UpdateThread's unit of work: the locked thread's settings set to `settings` (its compaction mark
    cleared: new settings deserve a new try at compaction) when they are `expected`; the row as stored
    and its entry count, or None, changing nothing, when they are not."""
    key = {"b_thread_id": thread_id, "b_tenant": tenant}
    locked = conn.execute(_LOCK, key).first()
    if locked is None:
        raise thread_not_found(thread_id)
    if settings_of(locked) != expected:
        return None
    conn.execute(
        update(ThreadRow)
        .where(_BY_ID)
        .values(**settings.__dict__, compaction_failed_sequence=None, updated_at=now()),
        key,
    )
    return thread_in(conn, tenant, thread_id)


def mark_compaction_in(conn: Connection, tenant: str, thread_id: str, failed_sequence: int | None) -> None:
    """Records (or clears, with None) the newest entry sequence a failed compaction covered, in the
    caller's unit of work (store/runner.py)."""
    conn.execute(
        update(ThreadRow).where(_BY_ID).values(compaction_failed_sequence=bindparam("b_failed")),
        {"b_thread_id": thread_id, "b_tenant": tenant, "b_failed": failed_sequence},
    )


def tenant_usage_in(conn: Connection, tenant: str) -> tuple[int, int]:
    """The tenant's threads, and the bytes of its entries a cap counts (entries.stored_bytes)."""
    threads = conn.execute(select(func.count()).select_from(ThreadRow).where(ThreadRow.tenant == tenant))

    def size(column: Any) -> Any:
        if conn.dialect.name == "postgresql":
            return func.coalesce(func.octet_length(column), 0)
        return func.coalesce(func.length(cast(column, LargeBinary)), 0)

    held = (
        size(EntryRow.content)
        + size(EntryRow.tool_calls_json)
        + size(EntryRow.reasoning_content)
        + size(EntryRow.content_parts_pb)
    )
    stored = conn.execute(select(func.coalesce(func.sum(held), 0)).where(EntryRow.tenant == tenant))
    return int(threads.scalar_one()), int(stored.scalar_one())


def settings_of(row: Any) -> ThreadSettings:
    return ThreadSettings(
        row.max_context_tokens,
        row.response_reserve_tokens,
        row.model,
        row.summary_model,
        row.compaction_strategy,
        row.keep_tool_results,
        row.compaction_trigger_percent,
        row.compaction_low_water_percent,
        row.clear_at_least_percent,
        row.dynamic_context_placement,
        row.retention_days,
    )


def thread_etag(created_at: datetime, updated_at: datetime, entry_count: int) -> str:
    """Thread.etag (AIP-154): every write of a thread's config, entries or turns that a reader of it
    could act on moves its update time or its entry count, and a thread created again under its id
    has another creation time. Both times aware, in UTC."""
    key = f"{created_at.isoformat()}|{updated_at.isoformat()}|{entry_count}"
    return hashlib.sha256(key.encode()).hexdigest()[:20]


def thread_message(row: Any, entries: int) -> history_pb2.Thread:
    thread = history_pb2.Thread(
        thread_id=row.thread_id,
        tenant=row.tenant,
        config=history_pb2.ThreadConfig(
            max_context_tokens=row.max_context_tokens,
            response_reserve_tokens=row.response_reserve_tokens,
            model=row.model,
            summary_model=row.summary_model,
            compaction_strategy=row.compaction_strategy,
            dynamic_context_placement=row.dynamic_context_placement,
        ),
        entry_count=entries,
    )
    # As set: unset means the default (the history report names what a load applied).
    for name in OPTIONAL_SETTINGS:
        value = getattr(row, name)
        if value is not None:
            setattr(thread.config, name, value)
    thread.create_time.FromDatetime(as_utc(row.created_at))
    thread.update_time.FromDatetime(as_utc(row.updated_at))
    thread.etag = thread_etag(as_utc(row.created_at), as_utc(row.updated_at), entries)
    return thread
