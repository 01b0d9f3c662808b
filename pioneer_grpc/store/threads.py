"""Thread rows: create, read (with the entry count), update."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from pioneer_grpc import reasons
from pioneer_grpc.errors import AlreadyExists, NotFound
from pioneer_grpc.store.clock import as_utc, now
from pioneer_grpc.store.models import EntryRow, ThreadRow
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


async def create_thread(
    session: AsyncSession, thread_id: str, settings: ThreadSettings
) -> tuple[ThreadRow, bool]:
    """Inserts in its own transaction; returns the row and whether this call created it.

    A taken id with the same settings answers the stored thread (a retried create);
    with other settings it is AlreadyExists naming the settings that differ.
    """
    moment = now()
    row = ThreadRow(
        thread_id=thread_id,
        max_context_tokens=settings.max_context_tokens,
        response_reserve_tokens=settings.response_reserve_tokens,
        model=settings.model,
        summary_model=settings.summary_model,
        compaction_strategy=settings.compaction_strategy,
        keep_tool_results=settings.keep_tool_results,
        created_at=moment,
        updated_at=moment,
    )
    try:
        async with session.begin():
            session.add(row)
    except IntegrityError:
        async with session.begin():
            stored = await session.get(ThreadRow, thread_id)
        if stored is None:  # created and gone again cannot happen: threads are never deleted
            raise
        differing = [k for k, v in settings_of(stored).__dict__.items() if getattr(settings, k) != v]
        if differing:
            raise AlreadyExists(
                f"thread {thread_id!r} already exists with a different {', '.join(differing)}",
                reason=reasons.THREAD_CONFLICT,
                metadata={"thread_id": thread_id, "differing_fields": ",".join(differing)},
            ) from None
        return stored, False
    return row, True


async def thread_row(session: AsyncSession, thread_id: str) -> ThreadRow:
    row = await session.get(ThreadRow, thread_id)
    if row is None:
        raise thread_not_found(thread_id)
    return row


async def entry_count(session: AsyncSession, thread_id: str) -> int:
    result = await session.execute(select(func.count()).where(EntryRow.thread_id == thread_id))
    return int(result.scalar_one())


async def update_thread(
    session: AsyncSession, thread_id: str, changes_for: Callable[[ThreadSettings], dict[str, Any]]
) -> ThreadRow:
    """In one transaction: `changes_for(current settings)` (which may raise to reject) is applied."""
    async with session.begin():
        row = await session.get(ThreadRow, thread_id, with_for_update=True)
        if row is None:
            raise thread_not_found(thread_id)
        for name, value in changes_for(settings_of(row)).items():
            setattr(row, name, value)
        # New settings deserve a new try at compaction.
        row.compaction_failed_sequence = None
        row.updated_at = now()
    return row


async def mark_compaction(session: AsyncSession, thread_id: str, failed_sequence: int | None) -> None:
    """Records (or clears, with None) the newest entry sequence a failed compaction covered."""
    async with session.begin():
        await session.execute(
            update(ThreadRow)
            .where(ThreadRow.thread_id == thread_id)
            .values(compaction_failed_sequence=failed_sequence)
        )


def settings_of(row: ThreadRow) -> ThreadSettings:
    return ThreadSettings(
        row.max_context_tokens,
        row.response_reserve_tokens,
        row.model,
        row.summary_model,
        row.compaction_strategy,
        row.keep_tool_results,
    )


def thread_message(row: ThreadRow, entries: int) -> history_pb2.Thread:
    thread = history_pb2.Thread(
        thread_id=row.thread_id,
        config=history_pb2.ThreadConfig(
            max_context_tokens=row.max_context_tokens,
            response_reserve_tokens=row.response_reserve_tokens,
            model=row.model,
            summary_model=row.summary_model,
            compaction_strategy=row.compaction_strategy,  # type: ignore[arg-type]
        ),
        entry_count=entries,
    )
    # As set: unset means the default (the history report names the strategy a load applied).
    if row.keep_tool_results is not None:
        thread.config.keep_tool_results = row.keep_tool_results
    thread.create_time.FromDatetime(as_utc(row.created_at))
    thread.update_time.FromDatetime(as_utc(row.updated_at))
    return thread
