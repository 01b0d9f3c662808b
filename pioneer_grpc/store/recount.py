"""Counting a thread's stored entries and summaries again, in another tokenizer.

A thread that moves to a model of another family (o200k_base, cl100k_base, the
Claude or Gemini estimate) has its entries and summaries counted once more, in
the new tokenizer, so that every later load budgets in the new model's counts
and still never tokenizes. `counted` is the caller's (blocking) counting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from pioneer_grpc.store.entries import ENTRY_COLUMNS, entry_message
from pioneer_grpc.store.models import EntryRow, SummaryRow
from pioneer_grpc.v1 import history_pb2

EntryCounts = Callable[[Sequence[history_pb2.ConversationEntry]], list[int]]
TextCounts = Callable[[Sequence[str]], list[int]]


async def stale_entries(
    session: AsyncSession, thread_id: str, tokenizer: str
) -> list[history_pb2.ConversationEntry]:
    """The thread's entries counted in another tokenizer than `tokenizer`."""
    query = select(*ENTRY_COLUMNS).where(EntryRow.thread_id == thread_id, EntryRow.tokenizer != tokenizer)
    async with session.begin():
        return [entry_message(row) for row in await session.execute(query)]


async def summaries_of(session: AsyncSession, thread_id: str) -> list[tuple[int, str]]:
    async with session.begin():
        rows = await session.execute(
            select(SummaryRow.id, SummaryRow.text).where(SummaryRow.thread_id == thread_id)
        )
        return [(row.id, row.text) for row in rows]


async def store_counts(
    session: AsyncSession,
    tokenizer: str,
    entry_counts: dict[int, int],
    summary_counts: dict[int, int],
) -> None:
    """Entry counts by sequence, summary counts by summary id; one transaction."""
    async with session.begin():
        for sequence, count in entry_counts.items():
            await session.execute(
                update(EntryRow).where(EntryRow.id == sequence).values(token_count=count, tokenizer=tokenizer)
            )
        for summary_id, count in summary_counts.items():
            await session.execute(
                update(SummaryRow).where(SummaryRow.id == summary_id).values(token_count=count)
            )
