"""The one append of AppendEntries and of a PrepareTurn round, inside the caller's transaction,
the thread locked (store/round.py).

An append stores a batch of entries idempotently by entry_id: those stored already are repeats,
which must carry the stored content hash (AlreadyExists otherwise), and a new entry for a
completed turn is refused (FailedPrecondition). Before it, the caller's `check` sees what the
store holds for the batch's tool calls and raises to reject. Each refusal rolls the caller's
transaction back.

On SQLite the writes are a statement a row, on the driver. On PostgreSQL they are one statement
(`append_ctes`, data-modifying CTEs), which may also ride with a statement that reads what the
checks need: then the checks run after it, on what it read from before its insert
(`append_rows` with `inserted`), and a refusal rolls the insert back with the transaction.
tests/store/test_postgres_statements.py proves each equal to the separate statements.
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
    NewEntry,
    entry_conflict,
    entry_message,
    entry_values,
    loaded_entry,
    stored_calls_in,
    turn_completed,
)
from pioneer_grpc.store.models import EntryRow, ThreadRow, ToolCallRow
from pioneer_grpc.store.turns import TurnRecord
from pioneer_grpc.v1 import history_pb2

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


def append_ctes(fresh_turns: str, guard: str = "true", complete_turn: bool = False) -> str:
    """What `inserted_separately` does, as the CTEs `batch`, `created` (RETURNING id, entry_id,
    turn_id), `calls` and `touched`: the batch as arrays, one row an entry; `fresh_turns` the
    array of the turns the batch opens; nothing inserted unless `guard` holds.

    With `complete_turn`, the batch's one turn, `:b_turn_id`, is completed with it, as
    store/completion.py completes a turn after an append: its new entries are inserted completed,
    the entries it held are completed by `completed_before` (RETURNING id, none unless `guard`
    holds), and `touched` moves both into the thread's completed count (a statement updates the
    thread's row once)."""
    completed = "true" if complete_turn else "false"
    entries_created = f"""batch AS (
        SELECT * FROM unnest({_BATCH_ARRAYS}) WITH ORDINALITY AS b({_BATCH_NAMES}, ord)
    ), created AS (
        INSERT INTO conversation_entries (
            thread_id, {_BATCH_NAMES}, tokenizer, completed, created_at
        )
        SELECT :b_thread_id, {_BATCH_NAMES}, :b_tokenizer, {completed}, :b_moment FROM batch WHERE {guard}
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
    )"""
    opened = f"(SELECT count(DISTINCT turn_id) FROM created WHERE turn_id = ANY({fresh_turns}))"
    if not complete_turn:
        return f"""{entries_created}, touched AS (
        UPDATE threads SET
            updated_at = :b_moment,
            open_entries = open_entries + (SELECT count(*) FROM created),
            open_turns = open_turns + {opened}
        WHERE thread_id = :b_thread_id AND EXISTS (SELECT FROM created)
    )"""
    # The append's counts and the completion's at once: the created entries open and close again,
    # those held close; the turn opens with the batch when it held none, and closes unless it has
    # no entry at all (a turn without entries is not counted open).
    return f"""{entries_created}, completed_before AS (
        UPDATE conversation_entries SET completed = true
        WHERE thread_id = :b_thread_id AND turn_id = :b_turn_id AND {guard}
        RETURNING id
    ), touched AS (
        UPDATE threads SET
            updated_at = CASE WHEN EXISTS (SELECT FROM created) THEN :b_moment ELSE updated_at END,
            open_entries = open_entries - (SELECT count(*) FROM completed_before),
            open_turns = open_turns + {opened} - 1,
            completed_entries = completed_entries
                + (SELECT count(*) FROM completed_before) + (SELECT count(*) FROM created)
        WHERE thread_id = :b_thread_id
            AND (EXISTS (SELECT FROM created) OR EXISTS (SELECT FROM completed_before))
    )"""


TURN_OPENS = (
    "ARRAY(SELECT CAST(:b_turn_id AS varchar) WHERE NOT EXISTS ("
    "SELECT FROM conversation_entries WHERE thread_id = :b_thread_id AND turn_id = :b_turn_id))"
)


def as_loaded(created: list[tuple[int, dict[str, Any]]]) -> list[history_pb2.ConversationEntry]:
    """`append_rows`' entries created, oldest first, as `turn_entries_lean` would read them."""
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
    batch: Batch,
    check: Callable[[StoredCalls], None],
    stored_turns: dict[str, list[history_pb2.ConversationEntry]] | None = None,
    thread_calls: dict[str, str] | None = None,
    inserted: dict[str, int] | None = None,
) -> list[tuple[int, dict[str, Any]]]:
    """Stores `batch` (idempotent by entry_id) in `turns` (locked, as `lock_turn` left them);
    returns each entry created, oldest first, as (sequence, its row as written: `entry_values`).
    The one append of AppendEntries and of a PrepareTurn round, inside the caller's transaction,
    the thread locked.

    `stored_turns` are the turns' entries, and `thread_calls` the thread's calls of the
    ids the batch names, when the caller read them already, in this transaction. Unless
    every entry is stored already (a repeat, checked when first appended), `check` sees
    what the store holds for the batch's tool calls, and raises to reject. A repeat must
    carry the stored content hash (AlreadyExists otherwise); a new entry for a completed
    turn is refused (FailedPrecondition). Each rolls the caller's transaction back.

    `inserted`: the batch's entries a statement of the caller's created already (entry_id ->
    sequence), `stored_turns` and `thread_calls` being what the store held before it; else the
    batch is inserted here, once checked.
    """
    stored = _checked(conn, thread_id, batch, check, stored_turns, thread_calls)
    if inserted is None:
        # A turn is open from its first entry on: those without stored entries open with the batch.
        fresh = [turn_id for turn_id in batch.turn_ids if not stored.turns.get(turn_id)]
        insert = inserted_in_one if conn.dialect.name == "postgresql" else inserted_separately
        inserted = insert(conn, thread_id, batch, fresh)
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
    conn: Connection, thread_id: str, batch: Batch, fresh_turns: list[str]
) -> dict[str, int]:
    """SQLite's append writes, a statement a row on the driver: the batch's entries not stored yet
    (ON CONFLICT DO NOTHING), the tool calls of those created, the thread's open counts (of
    `fresh_turns`, the turns the batch opens) and clock. Returns the sequence of each entry
    created, by entry_id."""
    rows = batch.rows
    inserted = (_INSERT_ENTRY_SQLITE.first(conn, row) for row in rows)
    created = {row.entry_id: row.id for row in inserted if row is not None}
    if not created:
        return created
    opened = {row["turn_id"] for row in rows if row["entry_id"] in created}
    _TOUCH_THREAD.rows(
        conn,
        {
            "b_thread_id": thread_id,
            "b_updated_at": batch.moment,
            "b_entries": len(created),
            "b_turns": len(opened & set(fresh_turns)),
        },
    )
    for call_row in batch.calls:
        if call_row["entry_id"] in created:
            _INSERT_CALL_SQLITE.rows(conn, call_row)
    return created


_INSERT_ALL_PG = Direct(
    text(f"WITH {append_ctes('CAST(:b_fresh_turns AS varchar[])')}\n    SELECT id, entry_id FROM created"),
    dialects=(POSTGRESQL,),
)
# The append's CTEs for one turn, `:b_turn_id`, in a statement whose CTE `locked` locks the
# thread's row (`model`, and `fresh`: store/history_state.py FRESH) and which writes the turn's row
# from it: the batch, counted in the tokenizer of `:b_counted_model`, is inserted only when that is
# the thread's model and the statement's snapshot is the newest (then it holds every entry
# committed, and the turn opens with the batch when it holds none of the turn's). The entries
# created are `created`'s rows.
LOCKED_GUARD = "(SELECT fresh AND model = :b_counted_model FROM locked)"
LOCKED_APPEND_CTES = append_ctes(TURN_OPENS, LOCKED_GUARD)
# The same, completing the turn with the batch (CompleteTurn carrying entries): the guard holds
# only when the statement's CTE `turn` answered the turn's row, which it does unless the turn was
# completed already (then nothing is inserted or completed, and the caller does it all after).
LOCKED_COMPLETING_CTES = append_ctes(
    TURN_OPENS, f"{LOCKED_GUARD} AND EXISTS (SELECT FROM turn)", complete_turn=True
)


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


def inserted_in_one(conn: Connection, thread_id: str, batch: Batch, fresh_turns: list[str]) -> dict[str, int]:
    """PostgreSQL's append writes: what `inserted_separately` does, in one statement."""
    params = batch_params(thread_id, batch)
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
