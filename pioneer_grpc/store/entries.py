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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

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
from pioneer_grpc.store.clock import as_utc, now
from pioneer_grpc.store.models import EntryRow, ThreadRow, ToolCallRow, TurnRow
from pioneer_grpc.store.threads import thread_not_found, turn_not_found
from pioneer_grpc.store.turns import ensure_turns, insert
from pioneer_grpc.v1 import history_pb2


@dataclass(frozen=True)
class NewEntry:
    entry: history_pb2.ConversationEntry
    content_hash: str
    token_count: int


@dataclass(frozen=True)
class AppendOutcome:
    entries: list[history_pb2.ConversationEntry]
    created_count: int
    existing_count: int
    # With `complete_turn_id`: how many entries the completed turn has.
    completed_entry_count: int = 0


async def _touch_thread(session: AsyncSession, thread_id: str) -> None:
    result: Any = await session.execute(
        update(ThreadRow).where(ThreadRow.thread_id == thread_id).values(updated_at=now())
    )
    if result.rowcount == 0:
        raise thread_not_found(thread_id)


async def _turn_statuses(session: AsyncSession, thread_id: str, turn_ids: list[str]) -> dict[str, int]:
    await ensure_turns(session, thread_id, turn_ids)
    rows = await session.execute(
        select(TurnRow.turn_id, TurnRow.status).where(
            TurnRow.thread_id == thread_id, TurnRow.turn_id.in_(turn_ids)
        )
    )
    return {row.turn_id: row.status for row in rows}


async def _turns_with_entries(session: AsyncSession, thread_id: str, turn_ids: list[str]) -> set[str]:
    rows = await session.execute(
        select(EntryRow.turn_id)
        .where(EntryRow.thread_id == thread_id, EntryRow.turn_id.in_(turn_ids))
        .distinct()
    )
    return {row.turn_id for row in rows}


async def _count_open(session: AsyncSession, thread_id: str, entries: int, turns: int) -> None:
    """New entries (of turns in progress) are open, and so is a turn they are the first of."""
    await session.execute(
        update(ThreadRow)
        .where(ThreadRow.thread_id == thread_id)
        .values(open_entries=ThreadRow.open_entries + entries, open_turns=ThreadRow.open_turns + turns)
    )


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


async def _already_stored(
    session: AsyncSession, thread_id: str, new_entries: Sequence[NewEntry]
) -> AppendOutcome | None:
    """The outcome of a batch that is stored already, read without taking the write lock.

    Agent loops repeat their entries on every round and on every retry; such a
    repeat then costs one read. Any new entry returns None (the write path
    decides); a changed repeat is rejected here, before anything is written.
    """
    if not new_entries:
        return None
    wanted = [n.entry.entry_id for n in new_entries]
    query = select(EntryRow.content_hash, *ENTRY_COLUMNS).where(
        EntryRow.thread_id == thread_id, EntryRow.entry_id.in_(wanted)
    )
    async with session.begin():
        rows = {row.entry_id: row for row in await session.execute(query)}
    for new in new_entries:
        row = rows.get(new.entry.entry_id)
        if row is None:
            return None
        if row.content_hash != new.content_hash:
            raise entry_conflict(thread_id, entry_message(row), new.entry)
    return AppendOutcome([entry_message(rows[entry_id]) for entry_id in wanted], 0, len(wanted))


async def stored_calls(
    session: AsyncSession, thread_id: str, entries: Sequence[history_pb2.ConversationEntry]
) -> StoredCalls:
    """What the batch's tool calls and results are checked against, in the session's transaction."""
    return await session.run_sync(lambda sync: stored_calls_in(sync.connection(), thread_id, entries))


def stored_calls_in(
    conn: Connection,
    thread_id: str,
    entries: Sequence[history_pb2.ConversationEntry],
    turns: dict[str, list[history_pb2.ConversationEntry]] | None = None,
) -> StoredCalls:
    """The batch's turns as stored, and which of the call ids it names the thread already has.

    `turns` are the batch's turns' entries when the caller read them already, in this transaction.
    """
    turn_ids = list(dict.fromkeys(e.turn_id for e in entries))
    stored = StoredCalls()
    if turns is not None:
        stored.turns = {turn_id: list(found) for turn_id, found in turns.items() if found}
    elif turn_ids:
        for row in conn.execute(_TURNS_ENTRIES, {"thread_id": thread_id, "turn_ids": turn_ids}):
            entry = loaded_entry(row)
            stored.turns.setdefault(entry.turn_id, []).append(entry)
    wanted = {e.entry_id for e in entries}
    stored.stored_entry_ids = {e.entry_id for turn in stored.turns.values() for e in turn} & wanted
    call_ids = named_call_ids(entries)
    if call_ids:
        calls = conn.execute(_THREAD_CALLS, {"thread_id": thread_id, "call_ids": list(call_ids)})
        stored.thread_calls = {row.call_id: row.entry_id for row in calls}
    return stored


async def _record_calls(session: AsyncSession, thread_id: str, entry: history_pb2.ConversationEntry) -> None:
    for call in entry.tool_calls:
        await session.execute(
            insert(session, ToolCallRow)
            .values(thread_id=thread_id, call_id=call.id, entry_id=entry.entry_id)
            .on_conflict_do_nothing(index_elements=["thread_id", "call_id", "entry_id"])
        )


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
        "content_hash": new.content_hash,
        "token_count": new.token_count,
        "tokenizer": tokenizer,
        "completed": False,
        "created_at": moment,
    }


# The columns `entry_values` gives, in its order (an INSERT compiled once names them).
ENTRY_VALUE_KEYS = tuple(entry_values("", NewEntry(history_pb2.ConversationEntry(), "", 0), "", datetime.min))


async def append_entries(
    session: AsyncSession,
    thread_id: str,
    new_entries: Sequence[NewEntry],
    tokenizer: str,
    check: Callable[[StoredCalls], None] | None = None,
    *,
    with_entries: bool = True,
    complete_turn_id: str = "",
) -> AppendOutcome:
    """All or nothing: any rejected entry rolls the whole batch back.

    `check` sees what the store holds for the batch's tool calls, under the
    thread's write lock, before anything is inserted; it raises to reject.
    Without `with_entries` the outcome has the counts only (nothing is read back).
    With `complete_turn_id` that turn is completed in the same transaction.
    """
    repeat = None if complete_turn_id else await _already_stored(session, thread_id, new_entries)
    if repeat is not None:
        return repeat if with_entries else AppendOutcome([], 0, repeat.existing_count)
    created = existing = 0
    stored_ids: list[str] = []
    async with session.begin():
        await _touch_thread(session, thread_id)
        if check is not None:
            check(await stored_calls(session, thread_id, [n.entry for n in new_entries]))
        turn_ids = list(dict.fromkeys(n.entry.turn_id for n in new_entries))
        statuses = await _turn_statuses(session, thread_id, turn_ids) if turn_ids else {}
        had_entries = await _turns_with_entries(session, thread_id, turn_ids) if turn_ids else set()
        opened: set[str] = set()
        moment = now()
        for new in new_entries:
            entry = new.entry
            inserted = await session.execute(
                insert(session, EntryRow)
                .values(**entry_values(thread_id, new, tokenizer, moment))
                .on_conflict_do_nothing(index_elements=["thread_id", "entry_id"])
                .returning(EntryRow.id)
            )
            if inserted.first() is not None:
                if statuses.get(entry.turn_id) == history_pb2.TURN_STATUS_COMPLETED:
                    raise turn_completed(thread_id, entry)
                await _record_calls(session, thread_id, entry)
                opened.add(entry.turn_id)
                created += 1
            else:
                stored = (
                    await session.execute(
                        select(EntryRow.content_hash, *ENTRY_COLUMNS).where(
                            EntryRow.thread_id == thread_id, EntryRow.entry_id == entry.entry_id
                        )
                    )
                ).one()
                if stored.content_hash != new.content_hash:
                    raise entry_conflict(thread_id, entry_message(stored), entry)
                existing += 1
            stored_ids.append(entry.entry_id)
        if created:
            await _count_open(session, thread_id, created, len(opened - had_entries))
        completed = await _complete(session, thread_id, complete_turn_id) if complete_turn_id else 0
        if not with_entries:
            return AppendOutcome([], created, existing, completed)
        rows = await session.execute(
            select(*ENTRY_COLUMNS).where(EntryRow.thread_id == thread_id, EntryRow.entry_id.in_(stored_ids))
        )
        by_id = {row.entry_id: entry_message(row) for row in rows}
    return AppendOutcome([by_id[entry_id] for entry_id in stored_ids], created, existing, completed)


async def _lock_thread(session: AsyncSession, thread_id: str) -> None:
    """Locks the thread row for the transaction (NotFound without one), changing nothing in it.

    On SQLite a write, so the transaction holds the write lock from its start.
    """
    if session.get_bind().dialect.name == "postgresql":
        query: Any = select(ThreadRow.thread_id).where(ThreadRow.thread_id == thread_id).with_for_update()
    else:
        query = (
            update(ThreadRow)
            .where(ThreadRow.thread_id == thread_id)
            .values(updated_at=ThreadRow.updated_at)
            .returning(ThreadRow.thread_id)
        )
    if (await session.execute(query)).first() is None:
        raise thread_not_found(thread_id)


async def complete_turn(session: AsyncSession, thread_id: str, turn_id: str) -> int:
    """Marks the turn and its entries completed; returns how many entries the turn has. Idempotent.

    The thread row is locked first (the lock order of appends and rounds): its open
    counts lose the turn's entries the first time the turn completes.
    """
    async with session.begin():
        return await _complete(session, thread_id, turn_id)


async def _complete(session: AsyncSession, thread_id: str, turn_id: str) -> int:
    """`complete_turn` inside the caller's transaction."""
    await _lock_thread(session, thread_id)
    status = await session.scalar(
        select(TurnRow.status).where(TurnRow.thread_id == thread_id, TurnRow.turn_id == turn_id)
    )
    if status is None:
        raise turn_not_found(thread_id, turn_id)
    await session.execute(
        update(TurnRow)
        .where(TurnRow.thread_id == thread_id, TurnRow.turn_id == turn_id)
        .values(status=history_pb2.TURN_STATUS_COMPLETED, updated_at=now())
    )
    await session.execute(
        update(EntryRow)
        .where(EntryRow.thread_id == thread_id, EntryRow.turn_id == turn_id)
        .values(completed=True)
    )
    count = int(
        await session.scalar(
            select(func.count()).where(EntryRow.thread_id == thread_id, EntryRow.turn_id == turn_id)
        )
        or 0
    )
    if status != history_pb2.TURN_STATUS_COMPLETED and count:
        await _count_open(session, thread_id, -count, -1)
    return count


# What a history load needs of an entry: no timestamps or reasoning.
LOAD_COLUMNS = (
    EntryRow.id,
    EntryRow.entry_id,
    EntryRow.turn_id,
    EntryRow.role,
    EntryRow.content,
    EntryRow.tool_calls_json,
    EntryRow.tool_call_id,
    EntryRow.name,
    EntryRow.artifact_refs_json,
    EntryRow.token_count,
    EntryRow.tokenizer,
    EntryRow.content_parts_pb,
)

_TURNS_ENTRIES = (
    select(*LOAD_COLUMNS)
    .where(
        EntryRow.thread_id == bindparam("thread_id"),
        EntryRow.turn_id.in_(bindparam("turn_ids", expanding=True)),
    )
    .order_by(EntryRow.id)
)
_THREAD_CALLS = select(ToolCallRow.call_id, ToolCallRow.entry_id).where(
    ToolCallRow.thread_id == bindparam("thread_id"),
    ToolCallRow.call_id.in_(bindparam("call_ids", expanding=True)),
)


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


def _completed_where(thread_id: str, after_sequence: int, exclude_turn_id: str) -> list[Any]:
    where = [EntryRow.thread_id == thread_id, EntryRow.completed.is_(True), EntryRow.id > after_sequence]
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


async def completed_entries(
    conn: AsyncConnection | AsyncSession,
    thread_id: str,
    after_sequence: int,
    exclude_turn_id: str,
    max_turns: int,
) -> tuple[list[history_pb2.ConversationEntry], bool]:
    """The entries of the newest `max_turns` completed turns after `after_sequence`, oldest first,
    and whether older completed turns exist there too.

    Entries come back without create_time and reasoning_content, which a load does not use.
    """
    where = _completed_where(thread_id, after_sequence, exclude_turn_id)
    turns = (await conn.execute(_newest_turns(where, max_turns))).all()
    more = len(turns) > max_turns
    if more:
        where.append(EntryRow.id >= turns[max_turns - 1].first)
    rows = (await conn.execute(select(*LOAD_COLUMNS).where(*where).order_by(EntryRow.id))).all()
    RowsRead.entries += len(rows)
    return [loaded_entry(row) for row in rows], more


def completed_entries_in(
    conn: Connection, thread_id: str, after_sequence: int, exclude_turn_id: str, max_turns: int
) -> tuple[list[history_pb2.ConversationEntry], bool]:
    """`completed_entries` on a synchronous connection (a round's transaction)."""
    where = _completed_where(thread_id, after_sequence, exclude_turn_id)
    turns = conn.execute(_newest_turns(where, max_turns)).all()
    more = len(turns) > max_turns
    if more:
        where.append(EntryRow.id >= turns[max_turns - 1].first)
    rows = conn.execute(select(*LOAD_COLUMNS).where(*where).order_by(EntryRow.id)).all()
    RowsRead.entries += len(rows)
    return [loaded_entry(row) for row in rows], more
