"""Thread rows: create, read (with the entry count), update."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

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


async def create_thread(session: AsyncSession, thread_id: str, settings: ThreadSettings) -> ThreadRow:
    """Inserts in its own transaction; AlreadyExists when the id is taken."""
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
        raise AlreadyExists(f"thread {thread_id!r} already exists") from None
    return row


async def thread_row(session: AsyncSession, thread_id: str) -> ThreadRow:
    row = await session.get(ThreadRow, thread_id)
    if row is None:
        raise NotFound(f"thread {thread_id!r} does not exist")
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
            raise NotFound(f"thread {thread_id!r} does not exist")
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
