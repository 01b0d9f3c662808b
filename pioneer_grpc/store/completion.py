"""CompleteTurn's unit of work: the turn and its entries completed, the thread's counts moved.

Run by the store's runner (store/runner.py) in one transaction, on the lean
statements a round uses. The thread row is locked first, the lock order of
appends and rounds; the open counts lose the turn's entries, and the completed
count gains them, the first time it completes. Completing a completed turn
changes nothing and answers the same.

On SQLite the rest is three statements on the driver (store/driver.py; the
status read only when the turn was completed before or does not exist); on
PostgreSQL, where each statement is a round trip, the lock and the same reads and
writes are one statement (`_LOCK_AND_COMPLETE_PG`, data-modifying CTEs). In READ
COMMITTED a statement reads the rows committed before it started: when it waited
for the lock, what the lock's holder committed is not in its snapshot, so then it
writes nothing and the completion runs again as a statement of its own
(`_COMPLETE_PG`), which sees every entry appended before the lock was granted.
CompleteTurn alone runs that one statement alone, its own transaction (no BEGIN, no
COMMIT: `completed_alone`), and a transaction only when it wrote nothing. CompleteTurn
carrying entries is an append that completes its turn: on PostgreSQL the append's lock
statement completes the turn when it inserts the entries (store/round.py
`lock_thread_and_turn` with `complete`, store/append.py LOCKED_COMPLETING_CTES), and
`completed_under_lock` runs after the append only when it did not.
tests/store/test_postgres_statements.py checks that both give the same answer
and leave the same rows.
"""

from __future__ import annotations

from sqlalchemy import bindparam, func, select, text, true, update
from sqlalchemy.engine import Connection

from pioneer_grpc.store.clock import now
from pioneer_grpc.store.driver import POSTGRESQL, SQLITE, Direct
from pioneer_grpc.store.history_state import FRESH
from pioneer_grpc.store.models import EntryRow, ThreadRow, TurnRow
from pioneer_grpc.store.round import lock_thread
from pioneer_grpc.store.threads import thread_not_found, turn_not_found
from pioneer_grpc.v1 import history_pb2

_OF_TURN_STATUS = (TurnRow.thread_id == bindparam("b_thread_id")) & (
    TurnRow.turn_id == bindparam("b_turn_id")
)
_OF_TURN_ENTRIES = (EntryRow.thread_id == bindparam("b_thread_id")) & (
    EntryRow.turn_id == bindparam("b_turn_id")
)
_TURN_STATUS = Direct(select(TurnRow.status).where(_OF_TURN_STATUS), dialects=(SQLITE,))
# Only a turn not completed yet: no row back for one completed, or for no such turn.
_COMPLETE_TURN = Direct(
    update(TurnRow)
    .where(_OF_TURN_STATUS & (TurnRow.status != bindparam("b_status")))
    .values(status=bindparam("b_status"), updated_at=bindparam("b_updated_at"))
    .returning(TurnRow.turn_id),
    dialects=(SQLITE,),
)
# Every entry of the turn: the rows it returns are the turn's entries, counted.
_COMPLETE_ENTRIES = Direct(
    update(EntryRow).where(_OF_TURN_ENTRIES).values(completed=true()).returning(EntryRow.id),
    dialects=(SQLITE,),
)
_TURN_ENTRY_COUNT = Direct(select(func.count().label("count")).where(_OF_TURN_ENTRIES), dialects=(SQLITE,))
_LESS_OPEN = Direct(
    update(ThreadRow)
    .where(ThreadRow.thread_id == bindparam("b_thread_id"))
    .values(
        open_entries=ThreadRow.open_entries - bindparam("b_entries"),
        open_turns=ThreadRow.open_turns - bindparam("b_turns"),
        completed_entries=ThreadRow.completed_entries + bindparam("b_entries"),
    ),
    dialects=(SQLITE,),
)


def _complete_pg(locked: str, guard: str, source: str) -> str:
    """PostgreSQL's completion: `locked` the CTEs before it, `guard` a condition on each write and
    read, `source` the FROM of its one row."""
    return f"""
    WITH {locked}turn AS (
        SELECT status FROM turns WHERE thread_id = :b_thread_id AND turn_id = :b_turn_id{guard}
    ), done AS (
        UPDATE turns SET status = :b_status, updated_at = :b_updated_at
        WHERE thread_id = :b_thread_id AND turn_id = :b_turn_id AND status <> :b_status{guard}
        RETURNING turn_id
    ), completed AS (
        UPDATE conversation_entries SET completed = true
        WHERE thread_id = :b_thread_id AND turn_id = :b_turn_id AND EXISTS (SELECT FROM done)
        RETURNING id
    ), less_open AS (
        UPDATE threads
        SET
            open_entries = open_entries - (SELECT count(*) FROM completed),
            open_turns = open_turns - 1,
            completed_entries = completed_entries + (SELECT count(*) FROM completed)
        WHERE thread_id = :b_thread_id AND EXISTS (SELECT FROM completed)
    )
    SELECT
        (SELECT status FROM turn) AS status,
        CASE WHEN EXISTS (SELECT FROM done) THEN (SELECT count(*) FROM completed)
        ELSE (
            SELECT count(*) FROM conversation_entries
            WHERE thread_id = :b_thread_id AND turn_id = :b_turn_id
        ) END AS entry_count{source}
    """


_COMPLETE_PG = Direct(text(_complete_pg("", "", "")), dialects=(POSTGRESQL,))
# `lock_thread` and `_COMPLETE_PG` in one round trip: the thread's row locked first (every write
# and read of the turn waits for it), and whether the row locked is the one the statement's snapshot
# read (`FRESH`: store/history_state.py says why that suffices for entries). Not fresh, it writes
# nothing and reads no status, and `_COMPLETE_PG` runs after it; so it does for a turn not found,
# which may have been created since the snapshot (a turn without entries leaves the thread's row
# alone).
_LOCK_AND_COMPLETE_PG = Direct(
    text(
        _complete_pg(
            f"""locked AS (
        SELECT {FRESH} AS fresh FROM threads WHERE thread_id = :b_thread_id FOR UPDATE
    ), """,
            " AND (SELECT fresh FROM locked)",
            "\n    FROM locked",
        )
    ),
    dialects=(POSTGRESQL,),
)


def complete_turn_in(conn: Connection, thread_id: str, turn_id: str) -> int:
    """Marks the turn and its entries completed; returns how many entries the turn has."""
    if conn.dialect.name == "postgresql":
        count = completed_alone(conn, thread_id, turn_id)
        if count is not None:
            return count
    else:
        lock_thread(conn, thread_id)
    return completed_under_lock(conn, thread_id, turn_id)


def completed_under_lock(conn: Connection, thread_id: str, turn_id: str) -> int:
    """`complete_turn_in` in a transaction that holds the thread's lock already (an append that
    completes its turn, CompleteTurn with entries): the completion's statements, without the lock."""
    if conn.dialect.name == "postgresql":
        return completed_in_one(conn, thread_id, turn_id)
    return completed_separately(conn, thread_id, turn_id)


def completed_alone(conn: Connection, thread_id: str, turn_id: str) -> int | None:
    """CompleteTurn's first try, for a statement alone (TransactionRunner.alone): on PostgreSQL
    `_LOCK_AND_COMPLETE_PG` alone, the turn's entry count, or None when it wrote nothing because
    it waited for a lock whose holder changed the thread or found no such turn (then
    `complete_turn_in`, in a transaction, completes or says NotFound). On SQLite
    `complete_turn_in`."""
    if conn.dialect.name != "postgresql":
        return complete_turn_in(conn, thread_id, turn_id)
    row = _LOCK_AND_COMPLETE_PG.first(conn, _params(thread_id, turn_id))
    if row is None:
        raise thread_not_found(thread_id)
    return int(row.entry_count) if row.status is not None else None


def _params(thread_id: str, turn_id: str) -> dict[str, object]:
    return {
        "b_thread_id": thread_id,
        "b_turn_id": turn_id,
        "b_status": history_pb2.TURN_STATUS_COMPLETED,
        "b_updated_at": now(),
    }


def completed_in_one(conn: Connection, thread_id: str, turn_id: str) -> int:
    """PostgreSQL's completion after the lock: one statement."""
    row = _COMPLETE_PG.first(conn, _params(thread_id, turn_id))
    if row.status is None:
        raise turn_not_found(thread_id, turn_id)
    return int(row.entry_count)


def completed_separately(conn: Connection, thread_id: str, turn_id: str) -> int:
    """SQLite's completion after the lock: the turn completed unless it was, then each write on its
    own; the turn's status is read only when it was not completed here (completed before, or none)."""
    params = {"b_thread_id": thread_id, "b_turn_id": turn_id}
    completing = {**params, "b_status": history_pb2.TURN_STATUS_COMPLETED, "b_updated_at": now()}
    if _COMPLETE_TURN.first(conn, completing) is None:
        if _TURN_STATUS.first(conn, params) is None:
            raise turn_not_found(thread_id, turn_id)
        return int(_TURN_ENTRY_COUNT.first(conn, params).count)
    count = len(_COMPLETE_ENTRIES.rows(conn, params))
    if count:
        _LESS_OPEN.rows(conn, {"b_thread_id": thread_id, "b_entries": count, "b_turns": 1})
    return count
