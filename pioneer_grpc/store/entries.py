"""Conversation entries and turns: idempotent appends, turn completion, history reads.

An append is one transaction. It first touches the thread row (a write), which
both checks that the thread exists and serialises appends to one thread: on
PostgreSQL the row lock makes sequence order equal commit order within a thread,
and on SQLite the first statement being a write takes the write lock before any
read, so concurrent writers wait (busy timeout) instead of failing on a stale
snapshot. Entries are inserted with ON CONFLICT DO NOTHING; an entry that was
already there must carry the same content hash.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Integer, bindparam, func, select, type_coerce
from sqlalchemy.engine import Connection

from pioneer_grpc import reasons
from pioneer_grpc.errors import AlreadyExists, FailedPrecondition
from pioneer_grpc.history.entries import (
    artifact_refs_json,
    differing_fields,
    parse_artifact_refs,
    parse_tool_calls,
    tool_calls_json,
)
from pioneer_grpc.history.entry_rules import StoredCalls, named_call_ids
from pioneer_grpc.history.parts import parse_parts, parts_blob
from pioneer_grpc.store.clock import as_utc
from pioneer_grpc.store.driver import Direct
from pioneer_grpc.store.models import EntryRow, ToolCallRow
from pioneer_grpc.store.port import AppendOutcome, NewEntry
from pioneer_grpc.v1 import history_pb2

__all__ = ["AppendOutcome", "NewEntry"]


ENTRY_COLUMNS = (
    EntryRow.id,
    EntryRow.entry_id,
    EntryRow.turn_id,
    EntryRow.role,
    EntryRow.content,
    EntryRow.tool_calls_json,
    EntryRow.tool_call_id,
    EntryRow.name,
    EntryRow.artifact_refs_json,
    EntryRow.reasoning_content,
    EntryRow.token_count,
    EntryRow.tokenizer,
    EntryRow.completed,
    EntryRow.created_at,
    EntryRow.content_parts_pb,
    EntryRow.is_error,
)


def entry_message(row: Any) -> history_pb2.ConversationEntry:
    """A row selected with ENTRY_COLUMNS as the stored entry, output-only fields set."""
    entry = history_pb2.ConversationEntry(
        entry_id=row.entry_id,
        turn_id=row.turn_id,
        role=row.role,
        content=row.content,
        tool_calls=parse_tool_calls(row.tool_calls_json),
        tool_call_id=row.tool_call_id,
        name=row.name,
        artifact_refs=parse_artifact_refs(row.artifact_refs_json),
        content_parts=parse_parts(row.content_parts_pb),
        sequence=row.id,
        token_count=row.token_count,
        tokenizer=row.tokenizer,
        completed=row.completed,
        is_error=bool(row.is_error),
    )
    if row.reasoning_content is not None:
        entry.reasoning_content = row.reasoning_content
    entry.create_time.FromDatetime(as_utc(row.created_at))
    return entry


def turn_completed(thread_id: str, entry: history_pb2.ConversationEntry) -> FailedPrecondition:
    return FailedPrecondition(
        f"turn {entry.turn_id!r} is completed; entry {entry.entry_id!r} belongs to a new turn",
        reason=reasons.TURN_COMPLETED,
        metadata={"thread_id": thread_id, "turn_id": entry.turn_id, "entry_id": entry.entry_id},
    )


def entry_conflict(
    thread_id: str, stored: history_pb2.ConversationEntry, new: history_pb2.ConversationEntry
) -> AlreadyExists:
    """ALREADY_EXISTS naming the fields that differ from the stored entry (a retry must repeat them)."""
    fields = differing_fields(stored, new) or ["content"]
    detail = ", ".join(fields)
    if fields == ["turn_id"]:
        detail = f"turn_id (stored in turn {stored.turn_id!r}, sent with turn {new.turn_id!r})"
    return AlreadyExists(
        f"entry {new.entry_id!r} already exists in thread {thread_id!r} with different {detail}",
        reason=reasons.ENTRY_CONFLICT,
        metadata={
            "thread_id": thread_id,
            "entry_id": new.entry_id,
            "differing_fields": ",".join(fields),
            "stored_turn_id": stored.turn_id,
        },
    )


def stored_calls_in(
    conn: Connection,
    tenant: str,
    thread_id: str,
    entries: Sequence[history_pb2.ConversationEntry],
    turns: dict[str, list[history_pb2.ConversationEntry]] | None = None,
    thread_calls: dict[str, str] | None = None,
) -> StoredCalls:
    """The batch's turns as stored, and which of the call ids it names the thread already has.

    `turns` are the batch's turns' entries, and `thread_calls` the thread's calls of the ids
    the batch names, when the caller read them already, in this transaction.
    """
    turn_ids = list(dict.fromkeys(e.turn_id for e in entries))
    stored = StoredCalls()
    if turns is not None:
        stored.turns = {turn_id: list(found) for turn_id, found in turns.items() if found}
    elif turn_ids:
        for row in conn.execute(
            _TURNS_ENTRIES, {"thread_id": thread_id, "tenant": tenant, "turn_ids": turn_ids}
        ):
            entry = loaded_entry(row)
            stored.turns.setdefault(entry.turn_id, []).append(entry)
    wanted = {e.entry_id for e in entries}
    stored.stored_entry_ids = {e.entry_id for turn in stored.turns.values() for e in turn} & wanted
    if thread_calls is None:
        thread_calls = thread_calls_in(conn, tenant, thread_id, named_call_ids(entries))
    stored.thread_calls = thread_calls
    return stored


def thread_calls_in(conn: Connection, tenant: str, thread_id: str, call_ids: Sequence[str]) -> dict[str, str]:
    """Call id -> a stored entry of the thread that made it, for `call_ids` (none: no statement).

    A statement per THREAD_CALLS_CHUNK ids, each built once for its number of ids: on SQLite it
    runs straight on the driver (store/driver.py), as every other statement of a round does.
    """
    found: dict[str, str] = {}
    ids = list(call_ids)
    for start in range(0, len(ids), THREAD_CALLS_CHUNK):
        chunk = ids[start : start + THREAD_CALLS_CHUNK]
        params = {
            "thread_id": thread_id,
            "tenant": tenant,
            **{f"call_id_{i}": call_id for i, call_id in enumerate(chunk)},
        }
        found.update((row.call_id, row.entry_id) for row in _thread_calls(len(chunk)).rows(conn, params))
    return found


def entry_values(thread_id: str, new: NewEntry, tokenizer: str, moment: datetime) -> dict[str, Any]:
    """The row of a new entry (not completed)."""
    entry = new.entry
    return {
        "thread_id": thread_id,
        "entry_id": entry.entry_id,
        "turn_id": entry.turn_id,
        "role": entry.role,
        "content": entry.content,
        "tool_calls_json": tool_calls_json(entry),
        "tool_call_id": entry.tool_call_id,
        "name": entry.name,
        "artifact_refs_json": artifact_refs_json(entry),
        "reasoning_content": entry.reasoning_content if entry.HasField("reasoning_content") else None,
        "content_parts_pb": parts_blob(entry),
        "is_error": entry.is_error,
        "content_hash": new.content_hash,
        "token_count": new.token_count,
        "tokenizer": tokenizer,
        "completed": False,
        "created_at": moment,
    }


def stored_bytes(values: dict[str, Any]) -> int:
    """The bytes an entry's row holds that a tenant's cap counts (content, tool calls, reasoning,
    parts): what `STORED_BYTES` sums in SQL, from `entry_values`' row."""
    return (
        len(values["content"].encode())
        + len(values["tool_calls_json"].encode())
        + len((values["reasoning_content"] or "").encode())
        + len(values["content_parts_pb"] or b"")
    )


def held_entry(row: Any) -> history_pb2.ConversationEntry:
    """A row selected with HELD_COLUMNS as the entry a repeat is checked against: its client fields
    (as a load reads them, with its reasoning)."""
    entry = loaded_entry(row)
    if row.reasoning_content is not None:
        entry.reasoning_content = row.reasoning_content
    return entry


def as_loaded(thread_id: str, new: NewEntry, tokenizer: str) -> history_pb2.ConversationEntry:
    """A new entry as a load reads it back once stored (what `loaded_entry` makes of its row); its
    sequence is not drawn yet (0)."""
    return loaded_entry(SimpleNamespace(**entry_values(thread_id, new, tokenizer, datetime.min), id=0))


# The columns `entry_values` gives, in its order (an INSERT compiled once names them).
ENTRY_VALUE_KEYS = tuple(entry_values("", NewEntry(history_pb2.ConversationEntry(), "", 0), "", datetime.min))


# What a history load needs of an entry: no timestamps or reasoning.
_LOAD_NAMES = (
    "id",
    "entry_id",
    "turn_id",
    "role",
    "content",
    "tool_calls_json",
    "tool_call_id",
    "name",
    "artifact_refs_json",
    "token_count",
    "tokenizer",
    "content_parts_pb",
)


def load_columns(entry: Any) -> tuple[Any, ...]:
    """LOAD_COLUMNS of `entry` (EntryRow or an alias of it). `is_error` as an integer: a statement
    run straight on the driver (store/driver.py) converts no column (0 or 1 on SQLite)."""
    return (
        *(getattr(entry, name) for name in _LOAD_NAMES),
        type_coerce(entry.is_error, Integer).label("is_error"),
    )


LOAD_COLUMNS = load_columns(EntryRow)

_TURNS_ENTRIES = (
    select(*LOAD_COLUMNS)
    .where(
        EntryRow.thread_id == bindparam("thread_id"),
        EntryRow.tenant == bindparam("tenant"),
        EntryRow.turn_id.in_(bindparam("turn_ids", expanding=True)),
    )
    .order_by(EntryRow.id)
)
# What a repeat is checked against (`held_entry`): a load's columns, the reasoning and the hash.
HELD_COLUMNS = (*LOAD_COLUMNS, EntryRow.reasoning_content, EntryRow.content_hash)
# Call ids (or entry ids) one statement asks for: a round names one or a few; a batch at its caps,
# thousands.
THREAD_CALLS_CHUNK = 64
# By number of call ids: the statement (the SQL an expanding IN list of that many renders).
_THREAD_CALLS: dict[int, Direct] = {}


def _thread_calls(count: int) -> Direct:
    found = _THREAD_CALLS.get(count)
    if found is None:
        statement = (
            select(ToolCallRow.call_id, ToolCallRow.entry_id)
            .where(
                ToolCallRow.thread_id == bindparam("thread_id"),
                ToolCallRow.tenant == bindparam("tenant"),
                ToolCallRow.call_id.in_([bindparam(f"call_id_{i}") for i in range(count)]),
            )
            .order_by(ToolCallRow.call_id, ToolCallRow.entry_id)
        )
        found = _THREAD_CALLS.setdefault(count, Direct(statement))
    return found


# By number of entry ids: the statement reading those the thread holds (`held_in`).
_HELD: dict[int, Direct] = {}


def _held(count: int) -> Direct:
    found = _HELD.get(count)
    if found is None:
        statement = select(*HELD_COLUMNS).where(
            EntryRow.thread_id == bindparam("thread_id"),
            EntryRow.tenant == bindparam("tenant"),
            EntryRow.entry_id.in_([bindparam(f"entry_id_{i}") for i in range(count)]),
        )
        found = _HELD.setdefault(count, Direct(statement))
    return found


def held_in(conn: Connection, tenant: str, thread_id: str, entry_ids: Sequence[str]) -> dict[str, Any]:
    """The rows (HELD_COLUMNS) of the entries of `entry_ids` the thread holds, in any turn, by entry id:
    a statement per THREAD_CALLS_CHUNK ids, on the driver as `thread_calls_in`'s."""
    found: dict[str, Any] = {}
    ids = list(dict.fromkeys(entry_ids))
    for start in range(0, len(ids), THREAD_CALLS_CHUNK):
        chunk = ids[start : start + THREAD_CALLS_CHUNK]
        params = {
            "thread_id": thread_id,
            "tenant": tenant,
            **{f"entry_id_{i}": entry_id for i, entry_id in enumerate(chunk)},
        }
        found.update((row.entry_id, row) for row in _held(len(chunk)).rows(conn, params))
    return found


_STORED_ENTRIES = select(*ENTRY_COLUMNS).where(
    EntryRow.thread_id == bindparam("thread_id"),
    EntryRow.tenant == bindparam("tenant"),
    EntryRow.entry_id.in_(bindparam("entry_ids", expanding=True)),
)


def stored_entries_in(
    conn: Connection, tenant: str, thread_id: str, entry_ids: Sequence[str]
) -> list[history_pb2.ConversationEntry]:
    """The stored entries, in the order of `entry_ids` (each stored), output-only fields set."""
    rows = conn.execute(
        _STORED_ENTRIES, {"thread_id": thread_id, "tenant": tenant, "entry_ids": list(entry_ids)}
    )
    by_id = {row.entry_id: entry_message(row) for row in rows}
    return [by_id[entry_id] for entry_id in entry_ids]


def loaded_entry(row: Any) -> history_pb2.ConversationEntry:
    """A row selected with LOAD_COLUMNS as an entry (completed: what a load reads)."""
    entry = history_pb2.ConversationEntry(
        entry_id=row.entry_id,
        turn_id=row.turn_id,
        role=row.role,
        content=row.content,
        tool_call_id=row.tool_call_id,
        name=row.name,
        sequence=row.id,
        token_count=row.token_count,
        tokenizer=row.tokenizer,
        completed=True,
        is_error=bool(row.is_error),
    )
    if row.tool_calls_json != "[]":
        entry.tool_calls.extend(parse_tool_calls(row.tool_calls_json))
    if row.artifact_refs_json != "[]":
        entry.artifact_refs.extend(parse_artifact_refs(row.artifact_refs_json))
    if row.content_parts_pb is not None:
        entry.content_parts.extend(parse_parts(row.content_parts_pb))
    return entry


class RowsRead:
    """Completed entries that history loads read in this process, whole or after a sequence
    (store/history_state.py): what tests count. Only ever grows."""

    entries = 0


def _completed_where(tenant: str, thread_id: str, after_sequence: int, exclude_turn_id: str) -> list[Any]:
    where = [
        EntryRow.thread_id == thread_id,
        EntryRow.tenant == tenant,
        EntryRow.completed.is_(True),
        EntryRow.id > after_sequence,
    ]
    if exclude_turn_id:
        where.append(EntryRow.turn_id != exclude_turn_id)
    return where


def _newest_turns(where: list[Any], max_turns: int) -> Any:
    first = func.min(EntryRow.id).label("first")
    return (
        select(EntryRow.turn_id, first)
        .where(*where)
        .group_by(EntryRow.turn_id)
        .order_by(first.desc())
        .limit(max_turns + 1)
    )


def completed_entries_in(
    conn: Connection, tenant: str, thread_id: str, after_sequence: int, exclude_turn_id: str, max_turns: int
) -> tuple[list[history_pb2.ConversationEntry], bool]:
    """`completed_entries` on a synchronous connection (a round's transaction)."""
    where = _completed_where(tenant, thread_id, after_sequence, exclude_turn_id)
    turns = conn.execute(_newest_turns(where, max_turns)).all()
    more = len(turns) > max_turns
    if more:
        where.append(EntryRow.id >= turns[max_turns - 1].first)
    rows = conn.execute(select(*LOAD_COLUMNS).where(*where).order_by(EntryRow.id)).all()
    RowsRead.entries += len(rows)
    return [loaded_entry(row) for row in rows], more
