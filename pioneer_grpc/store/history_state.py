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

from typing import Any

from sqlalchemy import (
    BigInteger,
    BindParameter,
    ColumnElement,
    Select,
    String,
    bindparam,
    cast,
    func,
    literal_column,
    select,
)
from sqlalchemy.engine import Connection
from sqlalchemy.orm import aliased

from pioneer_grpc.store.driver import Direct, postgresql_text
from pioneer_grpc.store.entries import RowsRead, load_columns, loaded_entry
from pioneer_grpc.store.models import EntryRow, SummaryRow, ThreadRow
from pioneer_grpc.store.port import NO_ENTRIES, HistoryRead, HistoryState
from pioneer_grpc.store.threads import thread_not_found

# The thread row's settings a load depends on, in HistoryState's order: what the state read and
# SQLite's round version (store/sqlite.py) both compare, so a new setting is added here once.
SETTINGS: tuple[Any, ...] = (
    ThreadRow.max_context_tokens,
    ThreadRow.response_reserve_tokens,
    ThreadRow.model,
    ThreadRow.summary_model,
    ThreadRow.compaction_strategy,
    ThreadRow.keep_tool_results,
    ThreadRow.compaction_failed_sequence,
    ThreadRow.compaction_trigger_percent,
    ThreadRow.compaction_low_water_percent,
    ThreadRow.clear_at_least_percent,
    ThreadRow.dynamic_context_placement,
)
SETTING_NAMES = tuple(column.key for column in SETTINGS)


def newest_summary_id() -> Any:
    """The thread's newest summary's id, as a column of a query over the thread row."""
    return (
        select(func.max(SummaryRow.id))
        .where(SummaryRow.thread_id == ThreadRow.thread_id, SummaryRow.tenant == ThreadRow.tenant)
        .scalar_subquery()
        .label("summary_id")
    )


def state_read(
    thread_id: BindParameter[str], tenant: BindParameter[str], exclude_turn_id: BindParameter[str]
) -> Select[Any]:
    """The thread's state (`HistoryState`), then what a load leaves out besides `exclude_turn_id`
    (the thread's open counts, migration 0006, less that turn's open entries) and whether that
    turn has completed entries: one row, none for an unknown thread."""
    of_thread = (EntryRow.thread_id == ThreadRow.thread_id) & (EntryRow.tenant == ThreadRow.tenant)
    completed = of_thread & EntryRow.completed.is_(True)

    def of_excluded(done: bool) -> Any:
        return (
            select(func.count())
            .select_from(EntryRow)
            .where(
                of_thread,
                EntryRow.completed.is_(done),
                EntryRow.turn_id == exclude_turn_id,
            )
            .scalar_subquery()
        )

    columns: list[Any] = [
        *SETTINGS,
        newest_summary_id(),
        ThreadRow.completed_entries.label("completed_count"),
        select(func.max(EntryRow.id)).where(completed).scalar_subquery().label("completed_max_id"),
        cast(ThreadRow.created_at, String).label("created"),
        # The thread row's last write (SQLite's round version, store/sqlite.py).
        cast(ThreadRow.updated_at, String).label("touched"),
        ThreadRow.open_entries,
        ThreadRow.open_turns,
        of_excluded(False).label("excluded_open"),
        of_excluded(True).label("excluded_completed"),
    ]
    return select(*columns).where(ThreadRow.thread_id == thread_id, ThreadRow.tenant == tenant)


# Bounded above too, by a constant no sequence exceeds: with `after` alone PostgreSQL plans the
# prepared statement for a third of the thread's completed entries and so plans it anew for every
# execution (most of its cost: 0.3 ms against 0.06); with both bounds it estimates a narrow range
# and keeps one plan. The same rows on either database.
_ANY_SEQUENCE: ColumnElement[int] = literal_column(str(2**63 - 1), BigInteger)


def _newer(entry: Any, thread_id: Any, tenant: Any, after: BindParameter[int]) -> ColumnElement[bool]:
    """`entry` (EntryRow or an alias) is a completed entry of `thread_id` after sequence `after`."""
    completed = (entry.thread_id == thread_id) & (entry.tenant == tenant) & entry.completed.is_(True)
    newer: ColumnElement[bool] = completed & (entry.id > after) & (entry.id <= _ANY_SEQUENCE)
    return newer


_NEWER = aliased(EntryRow, name="newer")

# The state, what a load leaves out, and the completed entries after `after`, oldest first:
# one statement, so the entries and the state that versions them are one snapshot on either
# database. Without entries after `after` it is one row, the entry columns NULL.
# Built once: constructing it costs about 1 ms of Python, executing it about 0.06 ms, and every
# load and every round runs it.
_READ = (
    state_read(bindparam("thread_id"), bindparam("tenant"), bindparam("exclude_turn_id"))
    .add_columns(*load_columns(_NEWER))
    .select_from(
        ThreadRow.__table__.outerjoin(
            _NEWER, _newer(_NEWER, ThreadRow.thread_id, ThreadRow.tenant, bindparam("after"))
        )
    )
    .order_by(_NEWER.id)
)
_STATE_FIELDS = tuple(HistoryState.__dataclass_fields__)
# Every load and round runs it.
_DIRECT = Direct(_READ)


def history_read_in(
    conn: Connection, tenant: str, thread_id: str, exclude_turn_id: str = "", after: int = NO_ENTRIES
) -> HistoryRead:
    """The thread's history state, what a load leaves out besides `exclude_turn_id`, and the
    completed entries after sequence `after`: one statement (NotFound for an unknown thread)."""
    return history_read_and_row(conn, tenant, thread_id, exclude_turn_id, after)[0]


def history_read_and_row(
    conn: Connection, tenant: str, thread_id: str, exclude_turn_id: str = "", after: int = NO_ENTRIES
) -> tuple[HistoryRead, Any]:
    """`history_read_in`, and the statement's first row (the thread's open counts as stored)."""
    params = {"thread_id": thread_id, "tenant": tenant, "exclude_turn_id": exclude_turn_id, "after": after}
    rows = _DIRECT.rows(conn, params)
    if not rows:
        raise thread_not_found(thread_id)
    return history_read_from(rows[0], rows, exclude_turn_id, after), rows[0]


# Whether the row of `threads` a statement locked is the one its snapshot read. The snapshot is
# taken when the statement starts: when it waits for the lock, the row it locks is the newest, but
# the rest of what it read may predate what the lock's holder committed. Every write of what a
# history read reads (entries appended or completed, a summary stored, a setting changed) writes
# the thread row in the same transaction, so a row unchanged since the snapshot means nothing it
# read changed either.
FRESH = (
    "(threads.xmin = (SELECT seen.xmin FROM threads AS seen"
    " WHERE seen.thread_id = threads.thread_id AND seen.tenant = threads.tenant))"
)

# PostgreSQL, as SQL for a textual statement: `_READ`'s one row without its entries, and the thread
# row's version (its `xmin`: each write of the row makes a new one, and every write of what a
# history read reads writes the row, as FRESH says); `:b_thread_id` the thread (of `:b_tenant`),
# `:b_turn_id` the turn left out. The head of a round's opening statement (store/postgres.py),
# which reads the newer entries beside it (`newer_entries`); `history_read_from` makes its answer.
_VERSIONED_STATE = state_read(
    bindparam("b_thread_id"), bindparam("b_tenant"), bindparam("b_turn_id")
).add_columns(literal_column("CAST(threads.xmin AS text)", String).label("version"))
VERSIONED_STATE = postgresql_text(_VERSIONED_STATE)
# Its columns' names, in its order.
VERSIONED_STATE_NAMES = tuple(column.name for column in _VERSIONED_STATE.selected_columns)


def newer_entries(first: tuple[str, ...], last: tuple[str, ...] = ()) -> str:
    """PostgreSQL, as SQL for a textual statement: a SELECT of the expressions `first`, then the
    completed entries of the thread `:b_thread_id` (of `:b_tenant`) after sequence `:b_after` as `_READ` reads
    them (LOAD_COLUMNS, the same bounds), then the expressions `last`, in no order."""
    entry = aliased(EntryRow, name="e")
    return postgresql_text(
        select(
            *(literal_column(expression) for expression in first),
            *load_columns(entry),
            *(literal_column(expression) for expression in last),
        ).where(_newer(entry, bindparam("b_thread_id"), bindparam("b_tenant"), bindparam("b_after")))
    )


def history_read_from(row: Any, newer_rows: list[Any], exclude_turn_id: str, after: int) -> HistoryRead:
    """The `HistoryRead` of a row with `VERSIONED_STATE_NAMES` and the rows of the completed entries
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
