"""One query that tells whether a thread's history changed: its settings, newest summary, completed entries.

Entries are never deleted and only ever become completed, so the count and the
largest id of completed entries, with the newest summary id and the settings,
change whenever what a load would read changes. The count is kept on the thread
row by the completions (migration 0011): reading it costs the same for any thread.
The same statement reads the completed entries after a given sequence
(`history_read_in`): a kept history is brought current with exactly those rows,
and the count and largest id read with them say whether they are all that changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, Select, bindparam, func, literal_column, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import aliased

from pioneer_grpc.store.driver import Direct
from pioneer_grpc.store.entries import LOAD_COLUMNS, RowsRead, loaded_entry
from pioneer_grpc.store.models import EntryRow, SummaryRow, ThreadRow
from pioneer_grpc.store.threads import thread_not_found
from pioneer_grpc.v1 import history_pb2


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
        ThreadRow.completed_entries.label("completed_count"),
        select(func.max(EntryRow.id)).where(completed).scalar_subquery().label("completed_max_id"),
    ).where(ThreadRow.thread_id == bindparam("thread_id"))


# Built once: constructing this statement (three subqueries) costs about 1 ms of Python
# per call, executing the built one about 0.06 ms; every load and every round runs it.
_QUERY = _build_query()


def _state(row: Any, thread_id: str) -> HistoryState:
    if row is None:
        raise thread_not_found(thread_id)
    return HistoryState(**row._mapping)


# Completed entries newer than a sequence, joined to the thread's one row.
# Bounded above too, by a constant no sequence exceeds: with `after` alone PostgreSQL plans the
# prepared statement for a third of the thread's completed entries and so plans it anew for every
# execution (most of its cost: 0.3 ms against 0.06); with both bounds it estimates a narrow range
# and keeps one plan. The same rows on either database.
_MAX_SEQUENCE = 2**63 - 1
_ANY_SEQUENCE: ColumnElement[int] = literal_column(str(_MAX_SEQUENCE), BigInteger)
_NEWER = aliased(EntryRow, name="newer")
_NEWER_COLUMNS = tuple(getattr(_NEWER, column.key) for column in LOAD_COLUMNS)

# The state, what a load leaves out besides `exclude_turn_id` (the thread's open counts,
# migration 0006, less that turn's open entries), whether that turn has completed entries,
# and the completed entries after `after`, oldest first: one statement, so the entries and
# the state that versions them are one snapshot on either database. Without entries after
# `after` it is one row, the entry columns NULL.
_READ = (
    _QUERY.add_columns(
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
        select(func.count())
        .select_from(EntryRow)
        .where(
            EntryRow.thread_id == ThreadRow.thread_id,
            EntryRow.completed.is_(True),
            EntryRow.turn_id == bindparam("exclude_turn_id"),
        )
        .scalar_subquery()
        .label("excluded_completed"),
        *_NEWER_COLUMNS,
    )
    .select_from(
        ThreadRow.__table__.outerjoin(
            _NEWER,
            (_NEWER.thread_id == ThreadRow.thread_id)
            & _NEWER.completed.is_(True)
            & (_NEWER.id > bindparam("after"))
            & (_NEWER.id <= _ANY_SEQUENCE),
        )
    )
    .order_by(_NEWER.id)
)
_STATE_FIELDS = tuple(HistoryState.__dataclass_fields__)
# Every load and round runs it.
_DIRECT = Direct(_READ)
# `after` when no entry is wanted: larger than any sequence.
NO_ENTRIES = 2**62


@dataclass(frozen=True)
class HistoryRead:
    # What was asked: the turn left out, and the sequence after which completed entries were read.
    exclude_turn_id: str
    after: int
    state: HistoryState
    # Entries of turns not completed but the excluded turn's: what a load leaves out (entries, turns).
    left_out: tuple[int, int]
    # Whether the excluded turn has completed entries (leaving it out changes what a load reads).
    excluded_completed: bool
    # The completed entries after the sequence asked for, oldest first.
    newer: list[history_pb2.ConversationEntry]


def history_read_in(
    conn: Connection, thread_id: str, exclude_turn_id: str = "", after: int = NO_ENTRIES
) -> HistoryRead:
    """The thread's history state, what a load leaves out besides `exclude_turn_id`, and the
    completed entries after sequence `after`: one statement (NotFound for an unknown thread)."""
    params = {"thread_id": thread_id, "exclude_turn_id": exclude_turn_id, "after": after}
    rows = _DIRECT.rows(conn, params)
    if not rows:
        raise thread_not_found(thread_id)
    return history_read_from(rows[0], rows, exclude_turn_id, after)


# Whether the row of `threads` a statement locked is the one its snapshot read. The snapshot is
# taken when the statement starts: when it waits for the lock, the row it locks is the newest, but
# the rest of what it read may predate what the lock's holder committed. Every write of what a
# history read reads (entries appended or completed, a summary stored, a setting changed) writes
# the thread row in the same transaction, so a row unchanged since the snapshot means nothing it
# read changed either.
FRESH = "(threads.xmin = (SELECT seen.xmin FROM threads AS seen WHERE seen.thread_id = threads.thread_id))"

# PostgreSQL: `_READ`'s one row without its entries, the thread's row locked for the transaction,
# with `fresh` (`FRESH`): a CTE of a statement that reads the newer entries
# beside it (events/round_opened.py, a round's one statement); `:b_thread_id` the thread,
# `:b_turn_id` the turn left out. `history_read_from` makes its answer.
LOCKED_STATE = f"""SELECT
            threads.max_context_tokens, threads.response_reserve_tokens,
            threads.model, threads.summary_model, threads.compaction_strategy,
            threads.keep_tool_results, threads.compaction_failed_sequence,
            (SELECT max(id) FROM thread_summaries
                WHERE thread_summaries.thread_id = threads.thread_id) AS summary_id,
            threads.completed_entries AS completed_count,
            (SELECT max(id) FROM conversation_entries AS done
                WHERE done.thread_id = threads.thread_id AND done.completed IS true) AS completed_max_id,
            threads.open_entries, threads.open_turns,
            (SELECT count(*) FROM conversation_entries AS open
                WHERE open.thread_id = threads.thread_id AND open.completed IS false
                AND open.turn_id = :b_turn_id) AS excluded_open,
            (SELECT count(*) FROM conversation_entries AS done
                WHERE done.thread_id = threads.thread_id AND done.completed IS true
                AND done.turn_id = :b_turn_id) AS excluded_completed,
            {FRESH} AS fresh
        FROM threads WHERE threads.thread_id = :b_thread_id FOR UPDATE"""
# The names of `LOCKED_STATE`'s columns that `history_read_from` reads, in its order.
LOCKED_STATE_NAMES = (*_STATE_FIELDS, "open_entries", "open_turns", "excluded_open", "excluded_completed")
# The completed entries after `:b_after`, as `_READ` reads them (the same bounds, so one plan):
# the end of a statement's SELECT whose first columns the caller wrote, ordered by `id`.
NEWER_ENTRIES = f"""{", ".join(f"e.{column.key}" for column in LOAD_COLUMNS)}
        FROM conversation_entries AS e
        WHERE e.thread_id = :b_thread_id AND e.completed IS true
            AND e.id > :b_after AND e.id <= {_MAX_SEQUENCE}"""


def history_read_from(row: Any, newer_rows: list[Any], exclude_turn_id: str, after: int) -> HistoryRead:
    """The `HistoryRead` of a row with `LOCKED_STATE_NAMES` and the rows of the completed entries
    after `after` (LOAD_COLUMNS; a row whose `id` is None is none), read by one statement."""
    state = HistoryState(**{name: getattr(row, name) for name in _STATE_FIELDS})
    excluded = int(row.excluded_open)
    newer = [loaded_entry(found) for found in newer_rows if found.id is not None]
    RowsRead.entries += len(newer)
    return HistoryRead(
        exclude_turn_id,
        after,
        state,
        (int(row.open_entries) - excluded, int(row.open_turns) - (1 if excluded else 0)),
        bool(row.excluded_completed),
        newer,
    )
