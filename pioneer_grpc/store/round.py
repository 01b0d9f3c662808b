"""The statements of one PrepareTurn round, all inside the caller's one transaction (store/runner.py).

Order (the same on SQLite and PostgreSQL, and the same lock order as appends and
the recorder: thread row, turn row, then the event lock):

    opened = round_opened(conn, manifest, after, call_ids, batch, ...)
                                        # events/round_opened.py: locks the thread (NotFound; serialises
                                        # the thread's rounds) and reads the history's state under
                                        # the lock (`lock_thread_read`); creates or locks the turn
                                        # (its entries, the thread's calls of call_ids) and records
                                        # the manifest on it; on PostgreSQL one statement, which
                                        # inserts the batch too
    created = insert_turn_entries(conn, ..., batch, check, opened.turn, opened.inserted)
                                        # the append's checks (store/append.py), and its insert
                                        # when the first statement did not insert
    current = [*turn.entries, *created] # the turn's entries, as a read would give them
    ... the history load on the same connection, from `opened.read` ...

On SQLite the first statement is a write (a no-op UPDATE), so the transaction
holds the write lock from its start: a concurrent writer, in another process too,
waits on the busy timeout instead of failing on a stale read snapshot.

On PostgreSQL each statement is a network round trip, so what SQLite does in
several statements on its driver is one statement there (data-modifying CTEs):
a round's lock, history read, turn, manifest record and append; an append's lock,
first turn and insert. The thread's lock rides with that statement; in READ
COMMITTED its snapshot may predate what the lock's holder committed while it
waited, which it tells (`FRESH`, store/history_state.py), and then what it read
is read again by statements of their own and its insert is left to the append.
tests/store/test_postgres_statements.py proves each equal to the separate
statements on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, select, text, update
from sqlalchemy.engine import Connection

from pioneer_grpc.history.entry_rules import StoredCalls
from pioneer_grpc.store.append import (
    LOCKED_APPEND_CTES,
    LOCKED_COMPLETING_CTES,
    LOCKED_GUARD,
    Batch,
    append_rows,
    as_loaded,
    batch_params,
)
from pioneer_grpc.store.clock import now
from pioneer_grpc.store.driver import POSTGRESQL, SQLITE, Direct
from pioneer_grpc.store.entries import (
    LOAD_COLUMNS,
    loaded_entry,
    thread_calls_in,
)
from pioneer_grpc.store.history_state import FRESH, HistoryRead, history_read_in
from pioneer_grpc.store.models import EntryRow, ThreadRow
from pioneer_grpc.store.threads import thread_not_found
from pioneer_grpc.store.turns import TurnRecord, lock_turn
from pioneer_grpc.v1 import history_pb2


@dataclass(frozen=True)
class LockedThread:
    model: str


# The round's fixed statements, built once (building one costs more Python than running it).
_LOCK_THREAD_PG = Direct(
    select(ThreadRow.model).where(ThreadRow.thread_id == bindparam("b_thread_id")).with_for_update(),
    dialects=(POSTGRESQL,),
)
_LOCK_THREAD_SQLITE = Direct(
    update(ThreadRow)
    .where(ThreadRow.thread_id == bindparam("b_thread_id"))
    .values(updated_at=ThreadRow.updated_at)
    .returning(ThreadRow.model),
    dialects=(SQLITE,),
)
_TURN_ENTRIES = Direct(
    select(*LOAD_COLUMNS)
    .where(EntryRow.thread_id == bindparam("thread_id"), EntryRow.turn_id == bindparam("turn_id"))
    .order_by(EntryRow.id),
    dialects=(SQLITE,),
)


def lock_thread(conn: Connection, thread_id: str) -> LockedThread:
    """The thread's model, with its row locked for the transaction; NotFound for an unknown thread."""
    # One name for both statements: an UPDATE reserves the column's own name.
    params = {"b_thread_id": thread_id}
    lock = _LOCK_THREAD_PG if conn.dialect.name == "postgresql" else _LOCK_THREAD_SQLITE
    row = lock.first(conn, params)
    if row is None:
        raise thread_not_found(thread_id)
    return LockedThread(model=row.model)


def lock_thread_read(conn: Connection, thread_id: str, exclude_turn_id: str, after: int) -> HistoryRead:
    """`lock_thread`, then `history_read_in`: a round's first reads on SQLite (on PostgreSQL the
    round's one statement makes them, events/round_opened.py)."""
    lock_thread(conn, thread_id)
    return history_read_in(conn, thread_id, exclude_turn_id, after)


@dataclass(frozen=True)
class LockedTurn:
    """A turn as `lock_turn_with_entries` left it: its row, its entries, the thread's calls asked for."""

    record: TurnRecord
    # The turn's stored entries, oldest first, as a history load reads them.
    entries: list[history_pb2.ConversationEntry]
    # Call id -> a stored entry that made it, for the call ids asked for.
    thread_calls: dict[str, str]
    # When the statement that locked it completed it too (`lock_thread_and_turn` with `complete`):
    # how many entries it completed, those above and those it created. None: it did not.
    completed: int | None = None


def lock_turn_with_entries(
    conn: Connection, thread_id: str, turn_id: str, call_ids: Sequence[str]
) -> LockedTurn:
    """`lock_turn`, then the turn's entries and which of `call_ids` the thread's entries made: what
    an append checks its batch against. The thread is locked already (`lock_thread`)."""
    locked = turn_locked_in_one if conn.dialect.name == "postgresql" else turn_locked_separately
    return locked(conn, thread_id, turn_id, call_ids)


def turn_locked_separately(
    conn: Connection, thread_id: str, turn_id: str, call_ids: Sequence[str]
) -> LockedTurn:
    """SQLite's `lock_turn_with_entries`: a statement each, on the driver."""
    record = lock_turn(conn, thread_id, turn_id)
    return LockedTurn(
        record, turn_entries_lean(conn, thread_id, turn_id), thread_calls_in(conn, thread_id, call_ids)
    )


_LOAD_NAMES = ", ".join(f"e.{column.key}" for column in LOAD_COLUMNS)
_OF_CALL_IDS = (
    "FROM tool_calls WHERE thread_id = :b_thread_id AND call_id = ANY(CAST(:b_call_ids AS varchar[]))"
)
# The thread's calls of `:b_call_ids` as two columns of arrays, the ids and the entries that made
# them, in one order.
CALL_ARRAYS = f"""ARRAY(SELECT call_id {_OF_CALL_IDS} ORDER BY call_id, entry_id) AS call_ids,
        ARRAY(SELECT entry_id {_OF_CALL_IDS} ORDER BY call_id, entry_id) AS call_entry_ids"""


def _turn_calls_and_entries(source: str) -> str:
    """The end of a statement whose CTE `turn` returns the turn's row (`source` its FROM): its calls
    asked for as two arrays, then each of its entries (none: one row, the entry columns NULL),
    oldest first."""
    return f"""
        {CALL_ARRAYS},
        {_LOAD_NAMES}
    FROM {source}
    LEFT JOIN conversation_entries AS e ON e.thread_id = :b_thread_id AND e.turn_id = :b_turn_id
    ORDER BY e.id
"""


_TURN_CALLS_AND_ENTRIES = _turn_calls_and_entries("turn")


def _insert_turn(source: str) -> str:
    """The turn's row created or touched (so locked), from the one row of `source`."""
    return f"""
        INSERT INTO turns (thread_id, turn_id, status, created_at, updated_at)
        SELECT :b_thread_id, :b_turn_id, :b_status, :b_moment, :b_moment FROM {source}
        ON CONFLICT (thread_id, turn_id) DO UPDATE SET updated_at = excluded.updated_at
        RETURNING status, prompt_manifest_json, manifest_event_id"""


# `_insert_turn` from `locked`, completing the turn when the batch goes in (LOCKED_GUARD: the row
# is fresh and the thread's model the one the batch was counted for): created completed, or
# touched and completed. A RETURNING gives the row as written, not the status before; so a turn
# completed already is locked but not written then, and answers no row (ON CONFLICT's WHERE).
# Otherwise it is as `_insert_turn`.
_INSERT_COMPLETING_TURN = f"""
        INSERT INTO turns (thread_id, turn_id, status, created_at, updated_at)
        SELECT
            :b_thread_id, :b_turn_id,
            CASE WHEN {LOCKED_GUARD} THEN CAST(:b_completed AS integer) ELSE CAST(:b_status AS integer) END,
            :b_moment, :b_moment
        FROM locked
        ON CONFLICT (thread_id, turn_id) DO UPDATE SET
            updated_at = excluded.updated_at,
            status = CASE WHEN excluded.status = :b_completed THEN excluded.status ELSE turns.status END
        WHERE turns.status <> :b_completed OR excluded.status <> :b_completed
        RETURNING status, prompt_manifest_json, manifest_event_id"""


# `turn_locked_separately` in one round trip: the turn's row (created or touched, so locked) with
# each of its entries (none: one row, the entry columns NULL), the calls as two arrays in the row.
# The thread's lock came first, in a statement of its own: this one's snapshot has every entry
# committed before the lock was granted.
_LOCK_TURN_WITH_ENTRIES_PG = Direct(
    text(
        f"""
    WITH turn AS ({_insert_turn("(VALUES (1)) AS one")}
    )
    SELECT
        turn.status, turn.prompt_manifest_json, turn.manifest_event_id,{_TURN_CALLS_AND_ENTRIES}    """
    ),
    dialects=(POSTGRESQL,),
)


def _lock_thread_and_turn_pg(turn: str, ctes: str, source: str) -> Direct:
    """The statement of `lock_thread_and_turn`: `locked`, the CTE `turn` (`turn` its statement),
    `ctes` (the append's, with `locked` and `turn` to read), then the turn's row from `source`."""
    turn_row = _turn_calls_and_entries(source)
    return Direct(
        text(
            f"""
    WITH locked AS (
        SELECT model, {FRESH} AS fresh FROM threads WHERE thread_id = :b_thread_id FOR UPDATE
    ), turn AS ({turn}
    ), {ctes}
    SELECT
        locked.model, locked.fresh, turn.status, turn.prompt_manifest_json, turn.manifest_event_id,
        ARRAY(SELECT id FROM created ORDER BY id) AS created_ids,
        ARRAY(SELECT entry_id FROM created ORDER BY id) AS created_entry_ids,{turn_row}    """
        ),
        dialects=(POSTGRESQL,),
    )


# `lock_thread` and `_LOCK_TURN_WITH_ENTRIES_PG` in one round trip: the thread's row locked first
# (the turn's row is written only from its row), its model, and whether the row locked is the one
# the statement's snapshot read (`FRESH`: store/history_state.py says why that suffices). The turn's
# row is created or touched on the newest rows whichever way; what the snapshot read of its entries
# and calls is read again when the row is not fresh. With a batch of entries of that turn, counted
# in the tokenizer of `:b_counted_model`, it inserts them too, as `inserted_in_one` does, when the
# row is fresh and that is the thread's model (else the append inserts them after it); the turn's
# entries and calls it answers are then those from before its insert.
_LOCK_THREAD_AND_TURN_PG = _lock_thread_and_turn_pg(
    _insert_turn("locked"), LOCKED_APPEND_CTES, "locked CROSS JOIN turn"
)
# `_LOCK_THREAD_AND_TURN_PG` that completes the turn with the batch (CompleteTurn carrying entries):
# when it inserts the batch, it completes the turn, its new entries and those it held, and moves the
# thread's counts as the append and the completion would (store/append.py LOCKED_COMPLETING_CTES).
# When it does not (a row not fresh, another model, a turn completed already: `turn` answers no
# row), it completes nothing, and the append and the completion run after it as they would.
_LOCK_THREAD_TURN_AND_COMPLETE_PG = _lock_thread_and_turn_pg(
    _INSERT_COMPLETING_TURN, LOCKED_COMPLETING_CTES, "locked LEFT JOIN turn ON true"
)


def _turn_params(thread_id: str, turn_id: str, call_ids: Sequence[str]) -> dict[str, Any]:
    return {
        "b_thread_id": thread_id,
        "b_turn_id": turn_id,
        "b_status": history_pb2.TURN_STATUS_IN_PROGRESS,
        "b_moment": now(),
        "b_call_ids": list(call_ids),
    }


def _locked_turn(rows: list[Any], created: int | None = None) -> LockedTurn:
    """The turn as the statement's rows give it. `created`: the entries the statement created as it
    completed the turn; the turn is then answered as it was before (in progress), its count set."""
    first = rows[0]
    entries = [loaded_entry(row) for row in rows if row.id is not None]
    status = first.status if created is None else history_pb2.TURN_STATUS_IN_PROGRESS
    return LockedTurn(
        TurnRecord(status, first.prompt_manifest_json, first.manifest_event_id),
        entries,
        dict(zip(first.call_ids, first.call_entry_ids, strict=True)),
        None if created is None else len(entries) + created,
    )


def turn_locked_in_one(conn: Connection, thread_id: str, turn_id: str, call_ids: Sequence[str]) -> LockedTurn:
    """PostgreSQL's `lock_turn_with_entries`: one statement."""
    return _locked_turn(_LOCK_TURN_WITH_ENTRIES_PG.rows(conn, _turn_params(thread_id, turn_id, call_ids)))


def lock_thread_and_turn(
    conn: Connection,
    thread_id: str,
    turn_id: str,
    call_ids: Sequence[str],
    batch: Batch | None = None,
    counted_model: str | None = None,
    complete: bool = False,
) -> tuple[LockedThread, LockedTurn, dict[str, int] | None]:
    """`lock_thread`, then `lock_turn_with_entries`: an append's first statements. On PostgreSQL
    one (a round trip fewer), the turn read again after it only when it waited for a lock whose
    holder changed the thread.

    On PostgreSQL the same statement inserts `batch` (entries of `turn_id`, counted in the
    tokenizer of `counted_model`) when the thread's model is `counted_model` and the statement
    did not wait for such a lock: the third value is then what it created (entry_id ->
    sequence), for `append_rows`; else it is None, and nothing of the batch is stored.

    With `complete` (and a batch), the statement that inserts the batch completes the turn too,
    as `completion.completed_under_lock` would after the append (a round trip fewer again): the
    turn answered is then as it was before (in progress), with `completed` set. A turn completed
    already is neither inserted into nor completed: the turn is read again, as after a wait."""
    if conn.dialect.name != "postgresql":
        locked = lock_thread(conn, thread_id)
        return locked, turn_locked_separately(conn, thread_id, turn_id, call_ids), None
    params = {
        **_turn_params(thread_id, turn_id, call_ids),
        **batch_params(thread_id, batch),
        "b_counted_model": counted_model if batch is not None else None,
    }
    complete = complete and batch is not None
    if complete:
        params["b_completed"] = history_pb2.TURN_STATUS_COMPLETED
    statement = _LOCK_THREAD_TURN_AND_COMPLETE_PG if complete else _LOCK_THREAD_AND_TURN_PG
    rows = statement.rows(conn, params)
    if not rows:
        raise thread_not_found(thread_id)
    first = rows[0]
    locked = LockedThread(model=first.model)
    goes_in = batch is not None and first.model == counted_model
    if not first.fresh or (complete and goes_in and first.status is None):
        return locked, turn_locked_in_one(conn, thread_id, turn_id, call_ids), None
    if not goes_in:
        return locked, _locked_turn(rows), None
    inserted = dict(zip(first.created_entry_ids, first.created_ids, strict=True))
    return locked, _locked_turn(rows, len(inserted) if complete else None), inserted


def insert_turn_entries(
    conn: Connection,
    thread_id: str,
    turn_id: str,
    batch: Batch,
    check: Callable[[StoredCalls], None],
    locked: LockedTurn,
    inserted: dict[str, int] | None = None,
) -> list[history_pb2.ConversationEntry]:
    """A round's append: `append` of one turn's entries, `locked` what it read of the turn.

    `inserted`: the batch's entries the statement that read `locked` created already (entry_id ->
    sequence; PostgreSQL's, events/round_opened.py), `locked` being what the store
    held before: they are checked as though created here, and what fails rolls the round back."""
    turns, stored_turns = {turn_id: locked.record}, {turn_id: locked.entries}
    return as_loaded(
        append_rows(conn, thread_id, turns, batch, check, stored_turns, locked.thread_calls, inserted)
    )


def turn_entries_lean(conn: Connection, thread_id: str, turn_id: str) -> list[history_pb2.ConversationEntry]:
    """The turn's entries so far, oldest first, with what a message needs (as a history load reads them)."""
    return [
        loaded_entry(row) for row in _TURN_ENTRIES.rows(conn, {"thread_id": thread_id, "turn_id": turn_id})
    ]
