"""The store port on SQLite: a statement a step, straight on the driver, in the store's one thread.

Through aiosqlite each statement costs several hand-offs between the event loop and
the driver's thread, so every unit runs in the runner's own thread on a plain
sqlite3 connection (store/runner.py), its statements on the driver (store/driver.py):
a unit is one hop, and units that wait for the thread together commit together, one
fsync for all (store/batches.py). A write transaction takes the write lock from its
start (BEGIN IMMEDIATE), so a concurrent writer, in another process too, waits on the
busy timeout instead of failing on a stale read snapshot.

A round is read in one hop (`open_round_in`, no lock: the thread's state read first,
which is its version) and committed in one unit (`commit_round`): the version read again
under the write lock, and the writes only when it is the one the round read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

from sqlalchemy import String, bindparam, cast, func, select, true, update
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection

from pioneer_grpc.store import round_usage, section_texts, token_counts
from pioneer_grpc.store.append import Batch, batch_of
from pioneer_grpc.store.clock import now
from pioneer_grpc.store.driver import SQLITE, Direct
from pioneer_grpc.store.entries import (
    ENTRY_VALUE_KEYS,
    LOAD_COLUMNS,
    held_entry,
    held_in,
    loaded_entry,
    thread_calls_in,
)
from pioneer_grpc.store.history_state import SETTING_NAMES, SETTINGS, history_read_and_row, newest_summary_id
from pioneer_grpc.store.manifests import record_in
from pioneer_grpc.store.models import EntryRow, ThreadRow, ToolCallRow, TurnRow
from pioneer_grpc.store.port import (
    Conflict,
    OpenedRound,
    Recorded,
    RoundAsk,
    RoundCommit,
    StoredEntry,
    TurnRecord,
)
from pioneer_grpc.store.sql import Conflicted, LockedTurn, SqlStore
from pioneer_grpc.store.threads import thread_not_found, turn_not_found
from pioneer_grpc.store.turns import lock_turn
from pioneer_grpc.v1 import history_pb2

IN_PROGRESS = history_pb2.TURN_STATUS_IN_PROGRESS

# The first statement of a thread's write: a write that changes nothing (the write lock is the
# transaction's already; this checks the thread exists and reads its model).
_OF_THREAD = (ThreadRow.thread_id == bindparam("b_thread_id")) & (ThreadRow.tenant == bindparam("b_tenant"))
_LOCK_THREAD = Direct(
    update(ThreadRow).where(_OF_THREAD).values(updated_at=ThreadRow.updated_at).returning(ThreadRow.model),
    dialects=(SQLITE,),
)
_TURN_ENTRIES = Direct(
    select(*LOAD_COLUMNS)
    .where(
        EntryRow.thread_id == bindparam("thread_id"),
        EntryRow.tenant == bindparam("tenant"),
        EntryRow.turn_id == bindparam("turn_id"),
    )
    .order_by(EntryRow.id),
    dialects=(SQLITE,),
)
# Also counts the turn's new entries as open (and the turn, when they are its first).
_TOUCH_THREAD = Direct(
    update(ThreadRow)
    .where(_OF_THREAD)
    .values(
        updated_at=bindparam("b_updated_at"),
        open_entries=ThreadRow.open_entries + bindparam("b_entries"),
        open_turns=ThreadRow.open_turns + bindparam("b_turns"),
    ),
    dialects=(SQLITE,),
)
# A row at a time: a round appends one or a few.
_INSERT_ENTRY = Direct(
    sqlite.insert(EntryRow)
    .on_conflict_do_nothing(index_elements=["thread_id", "entry_id", "tenant"])
    .returning(EntryRow.id, EntryRow.entry_id),
    column_keys=(*ENTRY_VALUE_KEYS, "tenant"),
    dialects=(SQLITE,),
)
_INSERT_CALL = Direct(
    # RETURNING a column of its own: else SQLAlchemy would return the key's server default (tenant).
    sqlite.insert(ToolCallRow)
    .on_conflict_do_nothing(index_elements=["thread_id", "call_id", "entry_id", "tenant"])
    .returning(ToolCallRow.call_id),
    column_keys=("thread_id", "call_id", "entry_id", "tenant"),
    dialects=(SQLITE,),
)

_OF_TURN_STATUS = (
    (TurnRow.thread_id == bindparam("b_thread_id"))
    & (TurnRow.tenant == bindparam("b_tenant"))
    & (TurnRow.turn_id == bindparam("b_turn_id"))
)
_OF_TURN_ENTRIES = (
    (EntryRow.thread_id == bindparam("b_thread_id"))
    & (EntryRow.tenant == bindparam("b_tenant"))
    & (EntryRow.turn_id == bindparam("b_turn_id"))
)
_TURN_STATUS = Direct(select(TurnRow.status).where(_OF_TURN_STATUS), dialects=(SQLITE,))
# Only a turn not completed yet: no row back for one completed, or for no such turn.
_COMPLETE_TURN = Direct(
    update(TurnRow)
    .where(_OF_TURN_STATUS & (TurnRow.status != bindparam("b_status")))
    .values(status=bindparam("b_status"), updated_at=bindparam("b_updated_at"))
    .returning(TurnRow.turn_id),
    dialects=(SQLITE,),
)
# Every entry of the turn: the rows it returns are the turn's entries, counted.
_COMPLETE_ENTRIES = Direct(
    update(EntryRow).where(_OF_TURN_ENTRIES).values(completed=true()).returning(EntryRow.id),
    dialects=(SQLITE,),
)
_TURN_ENTRY_COUNT = Direct(select(func.count().label("count")).where(_OF_TURN_ENTRIES), dialects=(SQLITE,))
_LESS_OPEN = Direct(
    update(ThreadRow)
    .where(_OF_THREAD)
    .values(
        open_entries=ThreadRow.open_entries - bindparam("b_entries"),
        open_turns=ThreadRow.open_turns - bindparam("b_turns"),
        completed_entries=ThreadRow.completed_entries + bindparam("b_entries"),
    ),
    dialects=(SQLITE,),
)


_TURN_ROW = Direct(
    select(TurnRow.status, TurnRow.prompt_manifest_json, TurnRow.manifest_event_id).where(
        TurnRow.thread_id == bindparam("thread_id"),
        TurnRow.tenant == bindparam("tenant"),
        TurnRow.turn_id == bindparam("turn_id"),
    ),
    dialects=(SQLITE,),
)


def turn_row_in(conn: Connection, tenant: str, thread_id: str, turn_id: str) -> TurnRecord | None:
    row = _TURN_ROW.first(conn, {"thread_id": thread_id, "tenant": tenant, "turn_id": turn_id})
    return None if row is None else TurnRecord(row.status, row.prompt_manifest_json, row.manifest_event_id)


def turn_entries_lean(
    conn: Connection, tenant: str, thread_id: str, turn_id: str
) -> list[history_pb2.ConversationEntry]:
    """The turn's entries so far, oldest first, with what a message needs (as a history load reads them)."""
    params = {"thread_id": thread_id, "tenant": tenant, "turn_id": turn_id}
    return [loaded_entry(row) for row in _TURN_ENTRIES.rows(conn, params)]


# What a round's commit compares with what its open read (`_version_of`): the thread row's settings
# and counts, its newest summary, its last write's time, the turn's status. Every write of what a
# round reads changes one of them. The counts alone would not do: an abandoned turn's entries are
# deleted and as many appended again leave them as they were; the abandon writes the time.
_VERSION = Direct(
    select(
        *SETTINGS,
        newest_summary_id(),
        ThreadRow.completed_entries.label("completed_count"),
        ThreadRow.open_entries,
        ThreadRow.open_turns,
        cast(ThreadRow.created_at, String).label("created"),
        cast(ThreadRow.updated_at, String).label("touched"),
        select(TurnRow.status)
        .where(
            TurnRow.thread_id == ThreadRow.thread_id,
            TurnRow.tenant == ThreadRow.tenant,
            TurnRow.turn_id == bindparam("turn_id"),
        )
        .scalar_subquery()
        .label("turn_status"),
    ).where(ThreadRow.thread_id == bindparam("thread_id"), ThreadRow.tenant == bindparam("tenant")),
    dialects=(SQLITE,),
)


def _version_of(row: Any, turn_status: int | None) -> tuple[Any, ...]:
    """A round's version from a row with _VERSION's columns (the state read's have them too)."""
    settings = tuple(getattr(row, name) for name in SETTING_NAMES)
    counts = row.summary_id, int(row.completed_count), int(row.open_entries), int(row.open_turns)
    # The creation time: a thread deleted and created again meanwhile is not the one the round read.
    status = IN_PROGRESS if turn_status is None else turn_status
    return (*settings, *counts, row.created, row.touched, status)


def _resolved(sent: asyncio.Future[None]) -> None:
    if not sent.done():
        sent.set_result(None)


class SqliteStore(SqlStore):
    def lock_thread(self, conn: Connection, thread_id: str) -> str:
        row = _LOCK_THREAD.first(conn, {"b_thread_id": thread_id, "b_tenant": self.tenant})
        if row is None:
            raise thread_not_found(thread_id)
        model: str = row.model
        return model

    def lock_thread_and_turn(
        self,
        conn: Connection,
        thread_id: str,
        turn_id: str,
        call_ids: Sequence[str],
        batch: Batch | None,
        counted_model: str | None,
        complete: bool,
    ) -> tuple[str, LockedTurn, dict[str, int] | None]:
        model = self.lock_thread(conn, thread_id)
        return model, self.lock_turn_with_entries(conn, thread_id, turn_id, call_ids), None

    def lock_turn_with_entries(
        self, conn: Connection, thread_id: str, turn_id: str, call_ids: Sequence[str]
    ) -> LockedTurn:
        tenant = self.tenant
        record = lock_turn(conn, tenant, thread_id, turn_id)
        return LockedTurn(
            record,
            turn_entries_lean(conn, tenant, thread_id, turn_id),
            thread_calls_in(conn, tenant, thread_id, call_ids),
        )

    def inserted(
        self, conn: Connection, thread_id: str, batch: Batch, fresh_turns: list[str]
    ) -> dict[str, int]:
        rows = batch.rows
        inserted = (_INSERT_ENTRY.first(conn, row) for row in rows)
        created = {row.entry_id: row.id for row in inserted if row is not None}
        if not created:
            return created
        opened = {row["turn_id"] for row in rows if row["entry_id"] in created}
        _TOUCH_THREAD.rows(
            conn,
            {
                "b_thread_id": thread_id,
                "b_tenant": self.tenant,
                "b_updated_at": batch.moment,
                "b_entries": len(created),
                "b_turns": len(opened & set(fresh_turns)),
            },
        )
        for call_row in batch.calls:
            if call_row["entry_id"] in created:
                _INSERT_CALL.rows(conn, call_row)
        return created

    def completed_under_lock(self, conn: Connection, thread_id: str, turn_id: str) -> int:
        """The turn completed unless it was, then each write on its own; the turn's status is read only
        when it was not completed here (completed before, or none)."""
        params = {"b_thread_id": thread_id, "b_tenant": self.tenant, "b_turn_id": turn_id}
        completing = {**params, "b_status": history_pb2.TURN_STATUS_COMPLETED, "b_updated_at": now()}
        if _COMPLETE_TURN.first(conn, completing) is None:
            if _TURN_STATUS.first(conn, params) is None:
                raise turn_not_found(thread_id, turn_id)
            return int(_TURN_ENTRY_COUNT.first(conn, params).count)
        count = len(_COMPLETE_ENTRIES.rows(conn, params))
        if count:
            _LESS_OPEN.rows(
                conn, {"b_thread_id": thread_id, "b_tenant": self.tenant, "b_entries": count, "b_turns": 1}
            )
        return count

    def completed_alone(self, conn: Connection, thread_id: str, turn_id: str) -> int | None:
        return self.complete_in(conn, thread_id, turn_id)

    def open_round_in(self, conn: Connection, ask: RoundAsk) -> OpenedRound:
        tenant, thread_id, turn_id = self.tenant, ask.thread_id, ask.turn_id
        # The state first: it is the version, so what is read after it is at least as new.
        read, row = history_read_and_row(conn, tenant, thread_id, turn_id, ask.history.after)
        turn = turn_row_in(conn, tenant, thread_id, turn_id)
        version = _version_of(row, None if turn is None else turn.status)
        read = self.read_in(conn, ask.history, read)
        held = held_in(conn, tenant, thread_id, ask.entry_ids)
        return OpenedRound(
            read,
            turn,
            [] if turn is None else turn_entries_lean(conn, tenant, thread_id, turn_id),
            thread_calls_in(conn, tenant, thread_id, ask.call_ids),
            {entry_id: StoredEntry(held_entry(row), row.content_hash) for entry_id, row in held.items()},
            version,
        )

    async def commit_round(self, commit: RoundCommit, sent: asyncio.Future[None]) -> Recorded | Conflict:
        tenant = self.tenant

        def work(conn: Connection) -> Recorded:
            thread_id, turn_id = commit.thread_id, commit.turn_id
            row = _VERSION.first(conn, {"thread_id": thread_id, "tenant": tenant, "turn_id": turn_id})
            if row is None:
                raise thread_not_found(thread_id)
            if _version_of(row, row.turn_status) != commit.version:
                raise Conflicted
            recorded = record_in(conn, tenant, commit.manifest, lock_turn(conn, tenant, thread_id, turn_id))
            round_usage.prepared_in(conn, tenant, commit, recorded.event_id)
            if commit.entries:
                batch = batch_of(tenant, thread_id, commit.entries, commit.tokenizer)
                self.inserted(conn, thread_id, batch, [turn_id] if commit.opens_turn else [])
            if commit.counts:
                token_counts.store_in(
                    conn, commit.counts.tokenizer, dict(commit.counts.entries), commit.counts.summary
                )
            if commit.texts:
                section_texts.keep_in(conn, tenant, thread_id, dict(commit.texts), now())
            # Its statements ran; the COMMIT's sync, which lets go of the GIL, is next: what the
            # caller does beside the commit (the body's JSON) now runs while the disk syncs,
            # where before the thread waited for the caller's work to let go of the GIL.
            with suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(_resolved, sent)
            return recorded

        loop = asyncio.get_running_loop()
        try:
            recorded, _ = await self.runner.transact(work)
        except Conflicted:
            return Conflict()
        finally:
            _resolved(sent)  # when the unit failed before it resolved it
        return recorded
