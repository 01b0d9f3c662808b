"""A thread's copy (store/copy_port.py) on SQL: read it, write it, fork it, each one unit of work.

A read first takes the thread's row: on PostgreSQL FOR SHARE, so no delete, append or round
of the thread (each writes that row first) commits until the read's transaction ends, and
every statement after it reads the thread as it was; on SQLite the store's transactions run
one at a time. A write inserts the thread row first, so a taken id is refused before anything
else is written. A fork reads the source and writes the copy in one transaction. Entries are
inserted in their order, so the new sequences keep it, and the summaries' and the compaction
mark's sequences are drawn from the entries they name.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC
from functools import partial
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from pioneer_grpc import reasons
from pioneer_grpc.errors import AlreadyExists, FailedPrecondition
from pioneer_grpc.store.clock import as_utc, now
from pioneer_grpc.store.copy_port import CopiedEntry, CopiedSummary, CopiedTurn, Fork, ThreadCopy, Written
from pioneer_grpc.store.entries import ENTRY_COLUMNS, entry_message, entry_values
from pioneer_grpc.store.models import (
    EntryCountRow,
    EntryRow,
    SummaryCountRow,
    SummaryRow,
    ThreadRow,
    ToolCallRow,
    TurnRow,
)
from pioneer_grpc.store.port import OPTIONAL_SETTINGS, Conflict, NewEntry
from pioneer_grpc.store.runner import TransactionRunner
from pioneer_grpc.store.summaries import summary_message
from pioneer_grpc.store.threads import (
    ThreadSettings,
    settings_of,
    thread_in,
    thread_message,
    thread_not_found,
    turn_not_found,
)
from pioneer_grpc.v1 import history_pb2

COMPLETED = history_pb2.TURN_STATUS_COMPLETED


def thread_exists(thread_id: str) -> AlreadyExists:
    return AlreadyExists(
        f"thread {thread_id!r} already exists: choose another id, or delete that thread first",
        reason=reasons.THREAD_EXISTS,
        metadata={"thread_id": thread_id},
    )


def turn_not_completed(thread_id: str, turn_id: str) -> FailedPrecondition:
    return FailedPrecondition(
        f"turn {turn_id!r} of thread {thread_id!r} is not completed: complete it, or fork at an earlier turn",
        reason=reasons.TURN_NOT_COMPLETED,
        metadata={"thread_id": thread_id, "turn_id": turn_id},
    )


def config_message(settings: ThreadSettings) -> history_pb2.ThreadConfig:
    config = history_pb2.ThreadConfig(
        max_context_tokens=settings.max_context_tokens,
        response_reserve_tokens=settings.response_reserve_tokens,
        model=settings.model,
        summary_model=settings.summary_model,
        compaction_strategy=settings.compaction_strategy,  # type: ignore[arg-type]
        dynamic_context_placement=settings.dynamic_context_placement,  # type: ignore[arg-type]
    )
    for name in OPTIONAL_SETTINGS:
        if getattr(settings, name) is not None:
            setattr(config, name, getattr(settings, name))
    return config


def settings_from(config: history_pb2.ThreadConfig) -> ThreadSettings:
    return ThreadSettings(
        max_context_tokens=config.max_context_tokens,
        response_reserve_tokens=config.response_reserve_tokens,
        model=config.model,
        summary_model=config.summary_model,
        compaction_strategy=config.compaction_strategy,
        dynamic_context_placement=config.dynamic_context_placement,
        **{name: getattr(config, name) if config.HasField(name) else None for name in OPTIONAL_SETTINGS},
    )


# ---- read -------------------------------------------------------------------------------------


def _thread_row(conn: Connection, tenant: str, thread_id: str) -> Any:
    found = conn.execute(
        select(*ThreadRow.__table__.columns)
        .where(ThreadRow.thread_id == thread_id, ThreadRow.tenant == tenant)
        .with_for_update(read=True)
    ).first()
    if found is None:
        raise thread_not_found(thread_id)
    return found


def read_copy_in(conn: Connection, tenant: str, thread_id: str, through_turn_id: str = "") -> ThreadCopy:
    """The thread as one snapshot; with `through_turn_id`, ForkThread's part of it: the completed
    entries through the last entry of that completed turn, their turns and the summaries covering
    no later entry."""
    row = _thread_row(conn, tenant, thread_id)
    through: int | None = None
    turns_where = [TurnRow.thread_id == thread_id, TurnRow.tenant == tenant]
    entries_where = [EntryRow.thread_id == thread_id, EntryRow.tenant == tenant]
    summaries_where = [SummaryRow.thread_id == thread_id, SummaryRow.tenant == tenant]
    if through_turn_id:
        through = _through(conn, tenant, thread_id, through_turn_id)
        entries_where += [EntryRow.completed.is_(True), EntryRow.id <= through]
        summaries_where += _summaries_then(conn, entries_where[:2], through)
    entry_rows = conn.execute(
        select(*ENTRY_COLUMNS, EntryRow.content_hash).where(*entries_where).order_by(EntryRow.id)
    ).all()
    entry_counts = _counts(
        conn,
        select(EntryCountRow.entry_sequence, EntryCountRow.tokenizer, EntryCountRow.token_count).where(
            EntryCountRow.entry_sequence.in_(select(EntryRow.id).where(*entries_where))
        ),
    )
    entries = [CopiedEntry(entry_message(r), r.content_hash, entry_counts.get(r.id, {})) for r in entry_rows]
    turn_rows = conn.execute(
        select(TurnRow.turn_id, TurnRow.status, TurnRow.created_at, TurnRow.updated_at)
        .where(*turns_where)
        .order_by(TurnRow.created_at, TurnRow.turn_id)
    ).all()
    if through is not None:
        kept = {e.entry.turn_id for e in entries} | {through_turn_id}
        turn_rows = [t for t in turn_rows if t.turn_id in kept and t.status == COMPLETED]
    turns = [CopiedTurn(t.turn_id, t.status, as_utc(t.created_at), as_utc(t.updated_at)) for t in turn_rows]
    summary_rows = conn.execute(
        select(*SummaryRow.__table__.columns).where(*summaries_where).order_by(SummaryRow.id)
    ).all()
    summary_counts = _counts(
        conn,
        select(SummaryCountRow.summary_id, SummaryCountRow.tokenizer, SummaryCountRow.token_count).where(
            SummaryCountRow.summary_id.in_(select(SummaryRow.id).where(*summaries_where))
        ),
    )
    summaries = [
        CopiedSummary(summary_message(s), s.tokenizer, summary_counts.get(s.id, {})) for s in summary_rows
    ]
    return ThreadCopy(
        config=config_message(settings_of(row)),
        created_at=as_utc(row.created_at),
        updated_at=as_utc(row.updated_at),
        compaction_failed_entry_id=failed_entry_id(row.compaction_failed_sequence, entries),
        turns=turns,
        entries=entries,
        summaries=summaries,
    )


def _through(conn: Connection, tenant: str, thread_id: str, turn_id: str) -> int:
    """The sequence a fork at `turn_id` copies through: its last entry's (for a turn without entries,
    the last entry stored before the turn was created)."""
    turn = conn.execute(
        select(TurnRow.status, TurnRow.created_at).where(
            TurnRow.thread_id == thread_id, TurnRow.tenant == tenant, TurnRow.turn_id == turn_id
        )
    ).first()
    if turn is None:
        raise turn_not_found(thread_id, turn_id)
    if turn.status != COMPLETED:
        raise turn_not_completed(thread_id, turn_id)
    of_entries = (EntryRow.thread_id == thread_id, EntryRow.tenant == tenant)
    last = conn.execute(
        select(func.max(EntryRow.id)).where(*of_entries, EntryRow.turn_id == turn_id)
    ).scalar()
    if last is None:
        last = conn.execute(
            select(func.max(EntryRow.id)).where(*of_entries, EntryRow.created_at <= turn.created_at)
        ).scalar()
    return int(last or 0)


def _summaries_then(conn: Connection, of_entries: list[Any], through: int) -> list[Any]:
    """Which summaries a fork through sequence `through` holds: those covering no later entry that
    the source held when it stored its next entry (a summary stored later, covering only the fork's
    part, was not in the body the source sent next, and would change the fork's)."""
    next_stored = conn.execute(
        select(func.min(EntryRow.created_at)).where(*of_entries, EntryRow.id > through)
    ).scalar()
    held = [SummaryRow.covers_through_sequence <= through]
    if next_stored is not None:
        held.append(SummaryRow.created_at <= next_stored)
    return held


def _counts(conn: Connection, statement: Any) -> dict[int, dict[str, int]]:
    found: dict[int, dict[str, int]] = defaultdict(dict)
    for key, tokenizer, count in conn.execute(statement):
        found[key][tokenizer] = count
    return found


def failed_entry_id(failed: int | None, entries: Sequence[CopiedEntry]) -> str:
    """The newest copied entry the failed compaction covered ("" when none, or when it covered more
    than the copy holds: a fork's history is another, worth a new try)."""
    if failed is None or not entries or failed > entries[-1].entry.sequence:
        return ""
    covered = [e.entry.entry_id for e in entries if e.entry.sequence <= failed]
    return covered[-1] if covered else ""


# ---- write ------------------------------------------------------------------------------------


def _insert_thread(conn: Connection) -> Any:
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    return dialect.insert(ThreadRow).on_conflict_do_nothing(index_elements=["thread_id", "tenant"])


def write_copy_in(
    conn: Connection, tenant: str, thread_id: str, copy: ThreadCopy, fresh: bool = False
) -> Written:
    """Stores `copy` as thread `thread_id`; `fresh`: the thread created now (a fork), else at the
    copy's times (its turns, entries and summaries keep theirs either way: listings order by them).
    What was stored."""
    entries = copy.entries
    open_turns = {e.entry.turn_id for e in entries if not e.entry.completed}
    moment = now()
    values = {
        "thread_id": thread_id,
        "tenant": tenant,
        **settings_from(copy.config).__dict__,
        "created_at": moment if fresh else copy.created_at,
        "updated_at": moment if fresh else copy.updated_at,
        "open_entries": sum(1 for e in entries if not e.entry.completed),
        "open_turns": len(open_turns),
        "completed_entries": sum(1 for e in entries if e.entry.completed),
    }
    if not conn.execute(_insert_thread(conn).values(values)).rowcount:
        raise thread_exists(thread_id)
    if copy.turns:
        conn.execute(
            insert(TurnRow),
            [
                {
                    "thread_id": thread_id,
                    "tenant": tenant,
                    "turn_id": t.turn_id,
                    "status": t.status,
                    "created_at": t.created_at,
                    "updated_at": t.updated_at,
                }
                for t in copy.turns
            ],
        )
    sequences = _insert_entries(conn, tenant, thread_id, entries)
    summary_ids = _insert_summaries(conn, tenant, thread_id, copy.summaries, sequences)
    counts = [
        {"entry_sequence": sequences[e.entry.entry_id], "tokenizer": tokenizer, "token_count": count}
        for e in entries
        for tokenizer, count in e.counts.items()
    ]
    if counts:
        conn.execute(insert(EntryCountRow), counts)
    summary_counts = [
        {"summary_id": summary_id, "tokenizer": tokenizer, "token_count": count}
        for summary_id, s in zip(summary_ids, copy.summaries, strict=True)
        for tokenizer, count in s.counts.items()
    ]
    if summary_counts:
        conn.execute(insert(SummaryCountRow), summary_counts)
    if copy.compaction_failed_entry_id:
        conn.execute(
            update(ThreadRow)
            .where(ThreadRow.thread_id == thread_id, ThreadRow.tenant == tenant)
            .values(compaction_failed_sequence=sequences[copy.compaction_failed_entry_id])
        )
    thread = thread_message(*thread_in(conn, tenant, thread_id))
    return Written(thread, len(copy.turns), len(copy.summaries))


def _insert_entries(
    conn: Connection, tenant: str, thread_id: str, entries: Sequence[CopiedEntry]
) -> dict[str, int]:
    """The entries and their calls, in order; sequence by entry id."""
    if not entries:
        return {}
    rows = []
    for copied in entries:
        entry = copied.entry
        new = NewEntry(entry, copied.content_hash, entry.token_count)
        values = entry_values(thread_id, new, entry.tokenizer, entry.create_time.ToDatetime(tzinfo=UTC))
        values["completed"] = entry.completed
        values["tenant"] = tenant
        rows.append(values)
    inserted = conn.execute(
        insert(EntryRow).returning(EntryRow.id, EntryRow.entry_id, sort_by_parameter_order=True), rows
    ).all()
    sequences = {r.entry_id: int(r.id) for r in inserted}
    calls = {(call.id, copied.entry.entry_id) for copied in entries for call in copied.entry.tool_calls}
    if calls:
        conn.execute(
            insert(ToolCallRow),
            [
                {"thread_id": thread_id, "tenant": tenant, "call_id": c, "entry_id": e}
                for c, e in sorted(calls)
            ],
        )
    return sequences


def _insert_summaries(
    conn: Connection,
    tenant: str,
    thread_id: str,
    summaries: Sequence[CopiedSummary],
    sequences: dict[str, int],
) -> list[int]:
    ids = []
    for copied in summaries:
        s = copied.summary
        values = {
            "thread_id": thread_id,
            "tenant": tenant,
            "text": s.text,
            "covers_through_sequence": sequences[s.covers_through_entry_id],
            "covers_through_entry_id": s.covers_through_entry_id,
            "token_count": s.token_count,
            "model": s.model,
            "summarizer": s.summarizer,
            "tokenizer": copied.tokenizer,
            "created_at": s.create_time.ToDatetime(tzinfo=UTC),
        }
        ids.append(int(conn.execute(insert(SummaryRow).values(values).returning(SummaryRow.id)).scalar_one()))
    return ids


# ---- fork -------------------------------------------------------------------------------------


def fork_in(conn: Connection, tenant: str, fork: Fork) -> Written | None:
    """ForkThread's unit of work: the new thread as stored, or None when the source's config
    is not `fork.expected` (nothing written)."""
    copy = read_copy_in(conn, tenant, fork.source_thread_id, fork.turn_id)
    if settings_from(copy.config) != settings_from(fork.expected):
        return None
    forked = ThreadCopy(
        config=fork.config,
        created_at=copy.created_at,
        updated_at=copy.updated_at,
        compaction_failed_entry_id=copy.compaction_failed_entry_id,
        turns=copy.turns,
        entries=copy.entries,
        summaries=copy.summaries,
    )
    return write_copy_in(conn, tenant, fork.thread_id, forked, fresh=True)


class SqlCopies:
    """The port's Copies on a SQL store (a tenant's view of it): each method one transaction, every
    statement naming the view's tenant."""

    def __init__(self, store: Any) -> None:
        self.runner: TransactionRunner = store.runner
        self.tenant: str = store.tenant

    async def read(self, thread_id: str, through_turn_id: str = "") -> ThreadCopy:
        copy, _ = await self.runner.transact(
            partial(read_copy_in, tenant=self.tenant, thread_id=thread_id, through_turn_id=through_turn_id)
        )
        return copy

    async def write(self, thread_id: str, copy: ThreadCopy) -> Written:
        written, _ = await self.runner.transact(
            lambda conn: write_copy_in(conn, self.tenant, thread_id, copy)
        )
        return written

    async def fork(self, fork: Fork) -> Written | Conflict:
        forked, _ = await self.runner.transact(lambda conn: fork_in(conn, self.tenant, fork))
        return Conflict() if forked is None else forked
