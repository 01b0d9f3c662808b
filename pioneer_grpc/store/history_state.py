"""One query that tells whether a thread's history changed: its settings, newest summary, completed entries.

Entries are never deleted and only ever become completed, so the count and the
largest id of completed entries, with the newest summary id and the settings,
change whenever what a load would read changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, bindparam, func, select
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from pioneer_grpc.store.driver import Direct
from pioneer_grpc.store.models import EntryRow, SummaryRow, ThreadRow
from pioneer_grpc.store.threads import thread_not_found


@dataclass(frozen=True)
class HistoryState:
    max_context_tokens: int
    response_reserve_tokens: int
    model: str
    summary_model: str
    compaction_strategy: int
    keep_tool_results: int | None
    compaction_failed_sequence: int | None
    summary_id: int | None
    completed_count: int
    completed_max_id: int | None


def _build_query() -> Select[Any]:
    completed = (EntryRow.thread_id == ThreadRow.thread_id) & EntryRow.completed.is_(True)
    return select(
        ThreadRow.max_context_tokens,
        ThreadRow.response_reserve_tokens,
        ThreadRow.model,
        ThreadRow.summary_model,
        ThreadRow.compaction_strategy,
        ThreadRow.keep_tool_results,
        ThreadRow.compaction_failed_sequence,
        select(func.max(SummaryRow.id))
        .where(SummaryRow.thread_id == ThreadRow.thread_id)
        .scalar_subquery()
        .label("summary_id"),
        select(func.count())
        .select_from(EntryRow)
        .where(completed)
        .scalar_subquery()
        .label("completed_count"),
        select(func.max(EntryRow.id)).where(completed).scalar_subquery().label("completed_max_id"),
    ).where(ThreadRow.thread_id == bindparam("thread_id"))


# Built once: constructing this statement (three subqueries) costs about 1 ms of Python
# per call, executing the built one about 0.06 ms; every load and every round runs it.
_QUERY = _build_query()


def _state(row: Any, thread_id: str) -> HistoryState:
    if row is None:
        raise thread_not_found(thread_id)
    return HistoryState(**row._mapping)


async def history_state(session: AsyncSession | AsyncConnection, thread_id: str) -> HistoryState:
    return _state((await session.execute(_QUERY, {"thread_id": thread_id})).first(), thread_id)


def history_state_in(conn: Connection, thread_id: str) -> HistoryState:
    """`history_state` on a synchronous connection (a round's transaction)."""
    return _state(conn.execute(_QUERY, {"thread_id": thread_id}).first(), thread_id)


# The state, and what a load leaves out besides `exclude_turn_id`: the thread's open counts
# (migration 0006) less that turn's open entries (an index lookup of one turn).
_WITH_LEFT_OUT = _QUERY.add_columns(
    ThreadRow.open_entries,
    ThreadRow.open_turns,
    select(func.count())
    .select_from(EntryRow)
    .where(
        EntryRow.thread_id == ThreadRow.thread_id,
        EntryRow.completed.is_(False),
        EntryRow.turn_id == bindparam("exclude_turn_id"),
    )
    .scalar_subquery()
    .label("excluded_open"),
)
_STATE_FIELDS = tuple(HistoryState.__dataclass_fields__)
# Every load and round runs it.
_DIRECT = Direct(_WITH_LEFT_OUT)


def history_state_and_left_out_in(
    conn: Connection, thread_id: str, exclude_turn_id: str = ""
) -> tuple[HistoryState, tuple[int, int]]:
    """`history_state_in`, and the (entries, turns) not completed but `exclude_turn_id`'s: what a
    history load leaves out. One statement."""
    row = _DIRECT.first(conn, {"thread_id": thread_id, "exclude_turn_id": exclude_turn_id})
    if row is None:
        raise thread_not_found(thread_id)
    state = HistoryState(**{name: getattr(row, name) for name in _STATE_FIELDS})
    excluded = int(row.excluded_open)
    return state, (int(row.open_entries) - excluded, int(row.open_turns) - (1 if excluded else 0))
