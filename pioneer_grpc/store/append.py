"""The one append of AppendEntries and CompleteTurn, inside the caller's transaction, the thread
locked (store/sql.py `SqlStore.append_in`).

An append stores a batch of entries idempotently by entry_id: those stored already are repeats,
which must carry the stored content hash (AlreadyExists otherwise), and a new entry for a
completed turn is refused (FailedPrecondition). Before it, `check` (the history rules on what the
store holds for the batch's tool calls) raises to reject. Each refusal rolls the caller's
transaction back.

On SQLite the writes are a statement a row, on the driver (store/sqlite.py). On PostgreSQL they
are one statement (store/postgres.py, data-modifying CTEs), which may also ride with the statement
that reads what the checks need: then the checks run after it, on what it read from before its
insert (`append_rows` with `inserted`), and a refusal rolls the insert back with the transaction.
The contract suite (tests/store/contract/) holds both to the same answers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.engine import Connection

from pioneer_grpc.history.entry_rules import StoredCalls
from pioneer_grpc.store.clock import now
from pioneer_grpc.store.entries import (
    ENTRY_COLUMNS,
    NewEntry,
    entry_conflict,
    entry_message,
    entry_values,
    loaded_entry,
    stored_calls_in,
    turn_completed,
)
from pioneer_grpc.store.models import EntryRow
from pioneer_grpc.store.port import TurnRecord
from pioneer_grpc.v1 import history_pb2


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


def batch_of(tenant: str, thread_id: str, new_entries: Sequence[NewEntry], tokenizer: str) -> Batch:
    """The rows name the tenant (TENANT_KEYS' order: after `entry_values`' columns)."""
    moment = now()
    return Batch(
        new_entries,
        [{**entry_values(thread_id, new, tokenizer, moment), "tenant": tenant} for new in new_entries],
        [
            {"thread_id": thread_id, "call_id": call.id, "entry_id": new.entry.entry_id, "tenant": tenant}
            for new in new_entries
            for call in new.entry.tool_calls
        ],
        moment,
    )


def append_rows(
    conn: Connection,
    tenant: str,
    thread_id: str,
    turns: dict[str, TurnRecord],
    batch: Batch,
    check: Callable[[StoredCalls], None],
    insert: Callable[[str, Batch, list[str]], dict[str, int]],
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
    batch is inserted here, once checked, by `insert(thread_id, batch, fresh turns)` (the
    database's own: store/sqlite.py, store/postgres.py).
    """
    stored = _checked(conn, tenant, thread_id, batch, check, stored_turns, thread_calls)
    if inserted is None:
        # A turn is open from its first entry on: those without stored entries open with the batch.
        fresh = [turn_id for turn_id in batch.turn_ids if not stored.turns.get(turn_id)]
        inserted = insert(thread_id, batch, fresh)
    return _created_rows(conn, tenant, thread_id, turns, batch, inserted)


def _checked(
    conn: Connection,
    tenant: str,
    thread_id: str,
    batch: Batch,
    check: Callable[[StoredCalls], None],
    stored_turns: dict[str, list[history_pb2.ConversationEntry]] | None,
    thread_calls: dict[str, str] | None,
) -> StoredCalls:
    """What the store holds for the batch, `check`ed unless every entry is stored already."""
    entries = [new.entry for new in batch.new_entries]
    stored = stored_calls_in(conn, tenant, thread_id, entries, stored_turns, thread_calls)
    if len(stored.stored_entry_ids) < len({entry.entry_id for entry in entries}):
        check(stored)
    return stored


def _created_rows(
    conn: Connection,
    tenant: str,
    thread_id: str,
    turns: dict[str, TurnRecord],
    batch: Batch,
    created: dict[str, int],
) -> list[tuple[int, dict[str, Any]]]:
    """The batch's entries `created` (entry_id -> sequence), the others checked as repeats."""
    repeats = [new for new in batch.new_entries if new.entry.entry_id not in created]
    if repeats:
        _check_repeats(conn, tenant, thread_id, repeats)
    done = history_pb2.TURN_STATUS_COMPLETED
    completed = {turn_id for turn_id, turn in turns.items() if turn.status == done}
    for new in batch.new_entries:
        if new.entry.entry_id in created and new.entry.turn_id in completed:
            raise turn_completed(thread_id, new.entry)
    # The rows as written are the rows a read returns (text and integers); ids ascend in insertion order.
    return sorted((created[row["entry_id"]], row) for row in batch.rows if row["entry_id"] in created)


_STORED_REPEATS = select(EntryRow.content_hash, *ENTRY_COLUMNS).where(
    EntryRow.thread_id == bindparam("thread_id"),
    EntryRow.tenant == bindparam("tenant"),
    EntryRow.entry_id.in_(bindparam("entry_ids", expanding=True)),
)


def _check_repeats(conn: Connection, tenant: str, thread_id: str, repeats: Sequence[NewEntry]) -> None:
    ids = [new.entry.entry_id for new in repeats]
    stored = {
        row.entry_id: row
        for row in conn.execute(_STORED_REPEATS, {"thread_id": thread_id, "tenant": tenant, "entry_ids": ids})
    }
    for new in repeats:
        row = stored[new.entry.entry_id]
        if row.content_hash != new.content_hash:
            raise entry_conflict(thread_id, entry_message(row), new.entry)
