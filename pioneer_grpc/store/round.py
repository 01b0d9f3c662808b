"""The statements of one PrepareTurn round, all inside the caller's one transaction (store/runner.py).

Order (the same on SQLite and PostgreSQL, and the same lock order as appends and
the recorder: thread row, turn row, then the event lock):

    locked = lock_thread(conn, thread_id)          # NotFound; serialises the thread's rounds
    turn = lock_turn(conn, thread_id, turn_id)     # store.turns: creates or locks the turn
    stored = turn_entries_lean(conn, thread_id, turn_id)
    created = insert_turn_entries(conn, ..., stored)   # one INSERT (on SQLite, one a row)
    current = [*stored, *created]                  # the turn's entries, as a read would give them
    ... the history load and the manifest record on the same connection ...

On SQLite the first statement is a write (a no-op UPDATE), so the transaction
holds the write lock from its start: a concurrent writer, in another process too,
waits on the busy timeout instead of failing on a stale read snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace

from sqlalchemy import bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from pioneer_grpc.history.entry_rules import StoredCalls
from pioneer_grpc.store.clock import now
from pioneer_grpc.store.driver import Direct
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
    turn_completed,
)
from pioneer_grpc.store.models import EntryRow, ThreadRow, ToolCallRow
from pioneer_grpc.store.threads import thread_not_found
from pioneer_grpc.store.turns import TurnRecord
from pioneer_grpc.v1 import history_pb2


@dataclass(frozen=True)
class LockedThread:
    model: str


# The round's fixed statements, built once (building one costs more Python than running it).
_LOCK_THREAD_PG = (
    select(ThreadRow.model).where(ThreadRow.thread_id == bindparam("b_thread_id")).with_for_update()
)
_LOCK_THREAD_SQLITE = Direct(
    update(ThreadRow)
    .where(ThreadRow.thread_id == bindparam("b_thread_id"))
    .values(updated_at=ThreadRow.updated_at)
    .returning(ThreadRow.model)
)
# Also counts the turn's new entries as open (and the turn, when they are its first).
_TOUCH_THREAD = Direct(
    update(ThreadRow)
    .where(ThreadRow.thread_id == bindparam("b_thread_id"))
    .values(
        updated_at=bindparam("b_updated_at"),
        open_entries=ThreadRow.open_entries + bindparam("b_entries"),
        open_turns=ThreadRow.open_turns + bindparam("b_turns"),
    )
)
_INSERT_ENTRIES_PG = (
    postgresql.insert(EntryRow)
    .on_conflict_do_nothing(index_elements=["thread_id", "entry_id"])
    .returning(EntryRow.id, EntryRow.entry_id)
)
_INSERT_CALLS_PG = postgresql.insert(ToolCallRow).on_conflict_do_nothing(
    index_elements=["thread_id", "call_id", "entry_id"]
)
# On SQLite a row at a time, straight on the driver: a round appends one or a few.
_INSERT_ENTRY_SQLITE = Direct(
    sqlite.insert(EntryRow)
    .on_conflict_do_nothing(index_elements=["thread_id", "entry_id"])
    .returning(EntryRow.id, EntryRow.entry_id),
    column_keys=ENTRY_VALUE_KEYS,
)
_INSERT_CALL_SQLITE = Direct(
    sqlite.insert(ToolCallRow).on_conflict_do_nothing(index_elements=["thread_id", "call_id", "entry_id"]),
    column_keys=("thread_id", "call_id", "entry_id"),
)
_TURN_ENTRIES = Direct(
    select(*LOAD_COLUMNS)
    .where(EntryRow.thread_id == bindparam("thread_id"), EntryRow.turn_id == bindparam("turn_id"))
    .order_by(EntryRow.id)
)


def lock_thread(conn: Connection, thread_id: str) -> LockedThread:
    """The thread's model, with its row locked for the transaction; NotFound for an unknown thread."""
    # One name for both statements: an UPDATE reserves the column's own name.
    params = {"b_thread_id": thread_id}
    if conn.dialect.name == "postgresql":
        row = conn.execute(_LOCK_THREAD_PG, params).first()
    else:
        row = _LOCK_THREAD_SQLITE.first(conn, params)
    if row is None:
        raise thread_not_found(thread_id)
    return LockedThread(model=row.model)


def insert_turn_entries(
    conn: Connection,
    thread_id: str,
    turn_id: str,
    turn: TurnRecord,
    new_entries: Sequence[NewEntry],
    tokenizer: str,
    check: Callable[[StoredCalls], None],
    stored_turn: list[history_pb2.ConversationEntry],
) -> list[history_pb2.ConversationEntry]:
    """A round's append: `append` of one turn's entries, `stored_turn` what it read of the turn."""
    return append(conn, thread_id, {turn_id: turn}, new_entries, tokenizer, check, {turn_id: stored_turn})


def append(
    conn: Connection,
    thread_id: str,
    turns: dict[str, TurnRecord],
    new_entries: Sequence[NewEntry],
    tokenizer: str,
    check: Callable[[StoredCalls], None],
    stored_turns: dict[str, list[history_pb2.ConversationEntry]] | None = None,
) -> list[history_pb2.ConversationEntry]:
    """Stores the entries (idempotent by entry_id) of `turns` (locked, as `lock_turn` left them);
    returns those created, oldest first, as `turn_entries_lean` would read them. The one append of
    AppendEntries and of a PrepareTurn round, inside the caller's transaction, the thread locked.

    `stored_turns` are the turns' entries when the caller read them already, in this
    transaction. Unless every entry is stored already (a repeat, checked when first
    appended), `check` sees what the store holds for the batch's tool calls before
    anything is inserted, and raises to reject. A repeat must carry the stored content
    hash (AlreadyExists otherwise); a new entry for a completed turn is refused
    (FailedPrecondition). Each rolls the caller's transaction back.
    """
    if not new_entries:
        return []
    stored = stored_calls_in(conn, thread_id, [new.entry for new in new_entries], stored_turns)
    if len(stored.stored_entry_ids) < len({new.entry.entry_id for new in new_entries}):
        check(stored)
    moment = now()
    postgres = conn.dialect.name == "postgresql"
    rows = [entry_values(thread_id, new, tokenizer, moment) for new in new_entries]
    if postgres:
        created = {row.entry_id: row.id for row in conn.execute(_INSERT_ENTRIES_PG, rows)}
    else:
        inserted = (_INSERT_ENTRY_SQLITE.first(conn, row) for row in rows)
        created = {row.entry_id: row.id for row in inserted if row is not None}
    repeats = [new for new in new_entries if new.entry.entry_id not in created]
    if repeats:
        _check_repeats(conn, thread_id, repeats)
    done = history_pb2.TURN_STATUS_COMPLETED
    completed = {turn_id for turn_id, turn in turns.items() if turn.status == done}
    for new in new_entries:
        if new.entry.entry_id in created and new.entry.turn_id in completed:
            raise turn_completed(thread_id, new.entry)
    if created:
        opened = {new.entry.turn_id for new in new_entries if new.entry.entry_id in created}
        _TOUCH_THREAD.rows(
            conn,
            {
                "b_thread_id": thread_id,
                "b_updated_at": moment,
                "b_entries": len(created),
                # A turn is open from its first entry on.
                "b_turns": sum(1 for turn_id in opened if not stored.turns.get(turn_id)),
            },
        )
        calls = [
            {"thread_id": thread_id, "call_id": call.id, "entry_id": new.entry.entry_id}
            for new in new_entries
            if new.entry.entry_id in created
            for call in new.entry.tool_calls
        ]
        if calls and postgres:
            conn.execute(_INSERT_CALLS_PG, calls)
        elif calls:
            for call_row in calls:
                _INSERT_CALL_SQLITE.rows(conn, call_row)
    # The rows as written are the rows a read returns (text and integers); ids ascend in insertion order.
    by_id = sorted((created[row["entry_id"]], row) for row in rows if row["entry_id"] in created)
    return [loaded_entry(SimpleNamespace(**row, id=sequence)) for sequence, row in by_id]


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
