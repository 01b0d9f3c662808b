"""The statements of one PrepareTurn round, all inside the caller's one transaction (store/runner.py).

Order (the same on SQLite and PostgreSQL, and the same lock order as appends and
the recorder: thread row, turn row, then the event lock):

    read = lock_thread_read(conn, thread_id, ...)  # NotFound; serialises the thread's rounds;
                                                   # the history's state read under the lock
    turn, recorded = turn_recorded(conn, manifest, call_ids)  # events/recorder.py: creates or locks
                                                   # the turn (lock_turn_with_entries: its entries,
                                                   # the thread's calls of call_ids) and records
                                                   # the manifest on it
    created = insert_turn_entries(conn, ..., turn)  # one statement (on SQLite, one a row)
    current = [*turn.entries, *created]            # the turn's entries, as a read would give them
    ... the history load on the same connection, from `read` ...

On SQLite the first statement is a write (a no-op UPDATE), so the transaction
holds the write lock from its start: a concurrent writer, in another process too,
waits on the busy timeout instead of failing on a stale read snapshot.

On PostgreSQL each statement is a network round trip, so what SQLite does in
several statements on its driver is one statement there (data-modifying CTEs):
the turn with its entries and calls (and the manifest's record, in a round), and
the append's writes. The thread's lock rides with the first statement after it
(a round's history read, an append's first turn); in READ COMMITTED that
statement's snapshot may predate what the lock's holder committed while it
waited, which it tells (`FRESH`, store/history_state.py), and then what it read
is read again by a statement of its own.
tests/store/test_postgres_statements.py proves each equal to the separate
statements on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from sqlalchemy import bindparam, select, text, update
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection

from pioneer_grpc.history.entry_rules import StoredCalls
from pioneer_grpc.store.clock import now
from pioneer_grpc.store.driver import POSTGRESQL, SQLITE, Direct
from pioneer_grpc.store.entries import (
    ENTRY_COLUMNS,
    ENTRY_VALUE_KEYS,
    LOAD_COLUMNS,
    NewEntry,
    entry_conflict,
    entry_message,
    entry_values,
    loaded_entry,
    stored_calls_in,
    thread_calls_in,
    turn_completed,
)
from pioneer_grpc.store.history_state import FRESH, HistoryRead, history_read_in, locked_history_read_in
from pioneer_grpc.store.models import EntryRow, ThreadRow, ToolCallRow
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
# Also counts the turn's new entries as open (and the turn, when they are its first).
_TOUCH_THREAD = Direct(
    update(ThreadRow)
    .where(ThreadRow.thread_id == bindparam("b_thread_id"))
    .values(
        updated_at=bindparam("b_updated_at"),
        open_entries=ThreadRow.open_entries + bindparam("b_entries"),
        open_turns=ThreadRow.open_turns + bindparam("b_turns"),
    ),
    dialects=(SQLITE,),
)
# On SQLite a row at a time, straight on the driver: a round appends one or a few.
_INSERT_ENTRY_SQLITE = Direct(
    sqlite.insert(EntryRow)
    .on_conflict_do_nothing(index_elements=["thread_id", "entry_id"])
    .returning(EntryRow.id, EntryRow.entry_id),
    column_keys=ENTRY_VALUE_KEYS,
    dialects=(SQLITE,),
)
_INSERT_CALL_SQLITE = Direct(
    sqlite.insert(ToolCallRow).on_conflict_do_nothing(index_elements=["thread_id", "call_id", "entry_id"]),
    column_keys=("thread_id", "call_id", "entry_id"),
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
    """`lock_thread`, then `history_read_in`: a round's first reads. On PostgreSQL one statement
    (a round trip fewer), read again after it only when it waited for a lock whose holder changed
    the thread."""
    if conn.dialect.name == "postgresql":
        read = locked_history_read_in(conn, thread_id, exclude_turn_id, after)
        if read is not None:
            return read
    else:
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


def _turn_calls_and_entries(source: str) -> str:
    """The end of a statement whose CTE `turn` returns the turn's row (`source` its FROM): its calls
    asked for as two arrays, then each of its entries (none: one row, the entry columns NULL),
    oldest first."""
    return f"""
        ARRAY(SELECT call_id {_OF_CALL_IDS} ORDER BY call_id, entry_id) AS call_ids,
        ARRAY(SELECT entry_id {_OF_CALL_IDS} ORDER BY call_id, entry_id) AS call_entry_ids,
        {_LOAD_NAMES}
    FROM {source}
    LEFT JOIN conversation_entries AS e ON e.thread_id = :b_thread_id AND e.turn_id = :b_turn_id
    ORDER BY e.id
"""


TURN_CALLS_AND_ENTRIES = _turn_calls_and_entries("turn")


def _insert_turn(source: str) -> str:
    """The turn's row created or touched (so locked), from the one row of `source`."""
    return f"""
        INSERT INTO turns (thread_id, turn_id, status, created_at, updated_at)
        SELECT :b_thread_id, :b_turn_id, :b_status, :b_moment, :b_moment FROM {source}
        ON CONFLICT (thread_id, turn_id) DO UPDATE SET updated_at = excluded.updated_at
        RETURNING status, prompt_manifest_json, manifest_event_id"""


# The entry columns an append writes from its batch, in `entry_values`' order, and their types.
_BATCH_COLUMNS = (
    ("entry_id", "varchar"),
    ("turn_id", "varchar"),
    ("role", "integer"),
    ("content", "text"),
    ("tool_calls_json", "text"),
    ("tool_call_id", "varchar"),
    ("name", "varchar"),
    ("artifact_refs_json", "text"),
    ("reasoning_content", "text"),
    ("content_parts_pb", "bytea"),
    ("content_hash", "varchar"),
    ("token_count", "integer"),
)
_BATCH_NAMES = ", ".join(name for name, _ in _BATCH_COLUMNS)
# Its arrays' parameters are named `a_...`: a round's statement has a scalar `b_turn_id` too.
_BATCH_ARRAYS = ", ".join(f"CAST(:a_{name} AS {kind}[])" for name, kind in _BATCH_COLUMNS)


def _append_ctes(fresh_turns: str, guard: str = "true") -> str:
    """What `inserted_separately` does, as the CTEs `batch`, `created` (RETURNING id, entry_id,
    turn_id), `calls` and `touched`: the batch as arrays, one row an entry; `fresh_turns` the
    array of the turns the batch opens; nothing inserted unless `guard` holds."""
    return f"""batch AS (
        SELECT * FROM unnest({_BATCH_ARRAYS}) WITH ORDINALITY AS b({_BATCH_NAMES}, ord)
    ), created AS (
        INSERT INTO conversation_entries (
            thread_id, {_BATCH_NAMES}, tokenizer, completed, created_at
        )
        SELECT :b_thread_id, {_BATCH_NAMES}, :b_tokenizer, false, :b_moment FROM batch WHERE {guard}
        ORDER BY ord
        ON CONFLICT (thread_id, entry_id) DO NOTHING
        RETURNING id, entry_id, turn_id
    ), calls AS (
        INSERT INTO tool_calls (thread_id, call_id, entry_id)
        SELECT :b_thread_id, c.call_id, c.entry_id
        FROM unnest(CAST(:a_call_ids AS varchar[]), CAST(:a_call_entry_ids AS varchar[]))
            WITH ORDINALITY AS c(call_id, entry_id, ord)
        WHERE c.entry_id IN (SELECT entry_id FROM created)
        ORDER BY c.ord
        ON CONFLICT (thread_id, call_id, entry_id) DO NOTHING
    ), touched AS (
        UPDATE threads SET
            updated_at = :b_moment,
            open_entries = open_entries + (SELECT count(*) FROM created),
            open_turns = open_turns + (
                SELECT count(DISTINCT turn_id) FROM created WHERE turn_id = ANY({fresh_turns})
            )
        WHERE thread_id = :b_thread_id AND EXISTS (SELECT FROM created)
    )"""


_TURN_OPENS = (
    "ARRAY(SELECT CAST(:b_turn_id AS varchar) WHERE NOT EXISTS ("
    "SELECT FROM conversation_entries WHERE thread_id = :b_thread_id AND turn_id = :b_turn_id))"
)
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
        turn.status, turn.prompt_manifest_json, turn.manifest_event_id,{TURN_CALLS_AND_ENTRIES}    """
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
_LOCK_THREAD_AND_TURN_PG = Direct(
    text(
        f"""
    WITH locked AS (
        SELECT model, {FRESH} AS fresh FROM threads WHERE thread_id = :b_thread_id FOR UPDATE
    ), turn AS ({_insert_turn("locked")}
    ), {_append_ctes(_TURN_OPENS, "(SELECT fresh AND model = :b_counted_model FROM locked)")}
    SELECT
        locked.model, locked.fresh, turn.status, turn.prompt_manifest_json, turn.manifest_event_id,
        ARRAY(SELECT id FROM created ORDER BY id) AS created_ids,
        ARRAY(SELECT entry_id FROM created ORDER BY id) AS created_entry_ids,{
            _turn_calls_and_entries("locked CROSS JOIN turn")
        }    """
    ),
    dialects=(POSTGRESQL,),
)


def _turn_params(thread_id: str, turn_id: str, call_ids: Sequence[str]) -> dict[str, Any]:
    return {
        "b_thread_id": thread_id,
        "b_turn_id": turn_id,
        "b_status": history_pb2.TURN_STATUS_IN_PROGRESS,
        "b_moment": now(),
        "b_call_ids": list(call_ids),
    }


def _locked_turn(rows: list[Any]) -> LockedTurn:
    first = rows[0]
    return LockedTurn(
        TurnRecord(first.status, first.prompt_manifest_json, first.manifest_event_id),
        [loaded_entry(row) for row in rows if row.id is not None],
        dict(zip(first.call_ids, first.call_entry_ids, strict=True)),
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
) -> tuple[LockedThread, LockedTurn, dict[str, int] | None]:
    """`lock_thread`, then `lock_turn_with_entries`: an append's first statements. On PostgreSQL
    one (a round trip fewer), the turn read again after it only when it waited for a lock whose
    holder changed the thread.

    On PostgreSQL the same statement inserts `batch` (entries of `turn_id`, counted in the
    tokenizer of `counted_model`) when the thread's model is `counted_model` and the statement
    did not wait for such a lock: the third value is then what it created (entry_id ->
    sequence), for `appended_rows`; else it is None, and nothing of the batch is stored."""
    if conn.dialect.name != "postgresql":
        locked = lock_thread(conn, thread_id)
        return locked, turn_locked_separately(conn, thread_id, turn_id, call_ids), None
    params = {
        **_turn_params(thread_id, turn_id, call_ids),
        **batch_params(thread_id, batch),
        "b_counted_model": counted_model if batch is not None else None,
    }
    rows = _LOCK_THREAD_AND_TURN_PG.rows(conn, params)
    if not rows:
        raise thread_not_found(thread_id)
    first = rows[0]
    locked = LockedThread(model=first.model)
    if not first.fresh:
        return locked, turn_locked_in_one(conn, thread_id, turn_id, call_ids), None
    inserted = None
    if batch is not None and first.model == counted_model:
        inserted = dict(zip(first.created_entry_ids, first.created_ids, strict=True))
    return locked, _locked_turn(rows), inserted


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
    sequence; PostgreSQL's, events/recorder.py `turn_recorded`), `locked` being what the store
    held before: they are checked as though created here, and what fails rolls the round back."""
    turns, stored_turns = {turn_id: locked.record}, {turn_id: locked.entries}
    return _as_loaded(
        appended_rows(conn, thread_id, turns, batch, check, stored_turns, locked.thread_calls, inserted)
    )


def append(
    conn: Connection,
    thread_id: str,
    turns: dict[str, TurnRecord],
    new_entries: Sequence[NewEntry],
    tokenizer: str,
    check: Callable[[StoredCalls], None],
) -> list[history_pb2.ConversationEntry]:
    """`append_rows`' entries created, oldest first, as `turn_entries_lean` would read them."""
    return _as_loaded(append_rows(conn, thread_id, turns, new_entries, tokenizer, check))


def _as_loaded(created: list[tuple[int, dict[str, Any]]]) -> list[history_pb2.ConversationEntry]:
    return [loaded_entry(SimpleNamespace(**row, id=sequence)) for sequence, row in created]


@dataclass(frozen=True)
class Batch:
    """An append's entries as the rows to write (`entry_values`), with their tool calls' rows."""

    new_entries: Sequence[NewEntry]
    rows: list[dict[str, Any]]
    calls: list[dict[str, str]]
    moment: datetime

    @property
    def turn_ids(self) -> list[str]:
        return list(dict.fromkeys(new.entry.turn_id for new in self.new_entries))


def batch_of(thread_id: str, new_entries: Sequence[NewEntry], tokenizer: str) -> Batch:
    moment = now()
    return Batch(
        new_entries,
        [entry_values(thread_id, new, tokenizer, moment) for new in new_entries],
        [
            {"thread_id": thread_id, "call_id": call.id, "entry_id": new.entry.entry_id}
            for new in new_entries
            for call in new.entry.tool_calls
        ],
        moment,
    )


def append_rows(
    conn: Connection,
    thread_id: str,
    turns: dict[str, TurnRecord],
    new_entries: Sequence[NewEntry],
    tokenizer: str,
    check: Callable[[StoredCalls], None],
    stored_turns: dict[str, list[history_pb2.ConversationEntry]] | None = None,
    thread_calls: dict[str, str] | None = None,
) -> list[tuple[int, dict[str, Any]]]:
    """Stores the entries (idempotent by entry_id) of `turns` (locked, as `lock_turn` left them);
    returns each created, oldest first, as (sequence, its row as written: `entry_values`). The one
    append of AppendEntries and of a PrepareTurn round, inside the caller's transaction, the thread
    locked.

    `stored_turns` are the turns' entries, and `thread_calls` the thread's calls of the
    ids the batch names, when the caller read them already, in this transaction. Unless
    every entry is stored already (a repeat, checked when first appended), `check` sees
    what the store holds for the batch's tool calls before anything is inserted, and
    raises to reject. A repeat must carry the stored content
    hash (AlreadyExists otherwise); a new entry for a completed turn is refused
    (FailedPrecondition). Each rolls the caller's transaction back.
    """
    if not new_entries:
        return []
    batch = batch_of(thread_id, new_entries, tokenizer)
    return appended_rows(conn, thread_id, turns, batch, check, stored_turns, thread_calls)


def appended_rows(
    conn: Connection,
    thread_id: str,
    turns: dict[str, TurnRecord],
    batch: Batch,
    check: Callable[[StoredCalls], None],
    stored_turns: dict[str, list[history_pb2.ConversationEntry]] | None,
    thread_calls: dict[str, str] | None,
    inserted: dict[str, int] | None = None,
) -> list[tuple[int, dict[str, Any]]]:
    """`append_rows` of `batch`. `inserted`: the batch's entries a statement of the caller's created
    already (entry_id -> sequence), `stored_turns` and `thread_calls` being what the store held
    before it: the same checks and answer, and what they refuse rolls the caller's transaction
    back; without it, the batch is inserted here once checked."""
    stored = _checked(conn, thread_id, batch, check, stored_turns, thread_calls)
    if inserted is None:
        # A turn is open from its first entry on: those without stored entries open with the batch.
        fresh = [turn_id for turn_id in batch.turn_ids if not stored.turns.get(turn_id)]
        insert = inserted_in_one if conn.dialect.name == "postgresql" else inserted_separately
        inserted = insert(conn, thread_id, batch.rows, batch.calls, fresh, batch.moment)
    return _created_rows(conn, thread_id, turns, batch, inserted)


def _checked(
    conn: Connection,
    thread_id: str,
    batch: Batch,
    check: Callable[[StoredCalls], None],
    stored_turns: dict[str, list[history_pb2.ConversationEntry]] | None,
    thread_calls: dict[str, str] | None,
) -> StoredCalls:
    """What the store holds for the batch, `check`ed unless every entry is stored already."""
    entries = [new.entry for new in batch.new_entries]
    stored = stored_calls_in(conn, thread_id, entries, stored_turns, thread_calls)
    if len(stored.stored_entry_ids) < len({entry.entry_id for entry in entries}):
        check(stored)
    return stored


def _created_rows(
    conn: Connection, thread_id: str, turns: dict[str, TurnRecord], batch: Batch, created: dict[str, int]
) -> list[tuple[int, dict[str, Any]]]:
    """The batch's entries `created` (entry_id -> sequence), the others checked as repeats."""
    repeats = [new for new in batch.new_entries if new.entry.entry_id not in created]
    if repeats:
        _check_repeats(conn, thread_id, repeats)
    done = history_pb2.TURN_STATUS_COMPLETED
    completed = {turn_id for turn_id, turn in turns.items() if turn.status == done}
    for new in batch.new_entries:
        if new.entry.entry_id in created and new.entry.turn_id in completed:
            raise turn_completed(thread_id, new.entry)
    # The rows as written are the rows a read returns (text and integers); ids ascend in insertion order.
    return sorted((created[row["entry_id"]], row) for row in batch.rows if row["entry_id"] in created)


def inserted_separately(
    conn: Connection,
    thread_id: str,
    rows: list[dict[str, Any]],
    calls: list[dict[str, str]],
    fresh_turns: list[str],
    moment: datetime,
) -> dict[str, int]:
    """SQLite's append writes, a statement a row on the driver: the entries not stored yet (ON
    CONFLICT DO NOTHING), the tool calls of those created, the thread's open counts and clock.
    Returns the sequence of each entry created, by entry_id."""
    inserted = (_INSERT_ENTRY_SQLITE.first(conn, row) for row in rows)
    created = {row.entry_id: row.id for row in inserted if row is not None}
    if not created:
        return created
    opened = {row["turn_id"] for row in rows if row["entry_id"] in created}
    _TOUCH_THREAD.rows(
        conn,
        {
            "b_thread_id": thread_id,
            "b_updated_at": moment,
            "b_entries": len(created),
            "b_turns": len(opened & set(fresh_turns)),
        },
    )
    for call_row in calls:
        if call_row["entry_id"] in created:
            _INSERT_CALL_SQLITE.rows(conn, call_row)
    return created


_INSERT_ALL_PG = Direct(
    text(f"WITH {_append_ctes('CAST(:b_fresh_turns AS varchar[])')}\n    SELECT id, entry_id FROM created"),
    dialects=(POSTGRESQL,),
)
# The append's CTEs for one turn, `:b_turn_id`, in a statement of a round that writes the turn's
# row too: the turn opens with the batch when the statement's snapshot holds none of its entries
# (the thread is locked already, so that snapshot has every entry committed), as `append_rows`
# decides from the entries it read. The entries created are `created`'s rows.
ROUND_APPEND_CTES = _append_ctes(_TURN_OPENS)


def batch_params(thread_id: str, batch: Batch | None) -> dict[str, Any]:
    """The append CTEs' parameters for `batch` (None: no entries, nothing written)."""
    rows = batch.rows if batch is not None else []
    calls = batch.calls if batch is not None else []
    tokenizers = {row["tokenizer"] for row in rows}
    assert len(tokenizers) <= 1, "a batch is counted in one tokenizer"
    params: dict[str, Any] = {f"a_{name}": [row[name] for row in rows] for name, _ in _BATCH_COLUMNS}
    params.update(
        b_thread_id=thread_id,
        b_tokenizer=tokenizers.pop() if tokenizers else "",
        b_moment=batch.moment if batch is not None else now(),
        a_call_ids=[call["call_id"] for call in calls],
        a_call_entry_ids=[call["entry_id"] for call in calls],
    )
    return params


def inserted_in_one(
    conn: Connection,
    thread_id: str,
    rows: list[dict[str, Any]],
    calls: list[dict[str, str]],
    fresh_turns: list[str],
    moment: datetime,
) -> dict[str, int]:
    """PostgreSQL's append writes: what `inserted_separately` does, in one statement."""
    params = batch_params(thread_id, Batch((), rows, calls, moment))
    params.update(b_fresh_turns=fresh_turns)
    return {row.entry_id: row.id for row in _INSERT_ALL_PG.rows(conn, params)}


_STORED_REPEATS = select(EntryRow.content_hash, *ENTRY_COLUMNS).where(
    EntryRow.thread_id == bindparam("thread_id"),
    EntryRow.entry_id.in_(bindparam("entry_ids", expanding=True)),
)


def _check_repeats(conn: Connection, thread_id: str, repeats: Sequence[NewEntry]) -> None:
    ids = [new.entry.entry_id for new in repeats]
    stored = {
        row.entry_id: row for row in conn.execute(_STORED_REPEATS, {"thread_id": thread_id, "entry_ids": ids})
    }
    for new in repeats:
        row = stored[new.entry.entry_id]
        if row.content_hash != new.content_hash:
            raise entry_conflict(thread_id, entry_message(row), new.entry)


def turn_entries_lean(conn: Connection, thread_id: str, turn_id: str) -> list[history_pb2.ConversationEntry]:
    """The turn's entries so far, oldest first, with what a message needs (as a history load reads them)."""
    return [
        loaded_entry(row) for row in _TURN_ENTRIES.rows(conn, {"thread_id": thread_id, "turn_id": turn_id})
    ]
