"""A PrepareTurn round's first statements: the thread locked with its history read, the turn
locked with its entries and the manifest recorded on it (store/round.py says the round's order).

On SQLite a statement each, on the driver. On PostgreSQL one statement, which inserts the round's
entries too when it can (below); tests/store/test_postgres_statements.py proves it equal to
SQLite's statements, and shows what it does after a wait for the thread's lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqlalchemy import text
from sqlalchemy.engine import Connection

from pioneer_grpc.events.recorder import PreparedManifest, Recorded, new_event, record_in, turn_columns
from pioneer_grpc.store.append import LOCKED_APPEND_CTES, Batch, batch_params
from pioneer_grpc.store.clock import now
from pioneer_grpc.store.driver import POSTGRESQL, Direct
from pioneer_grpc.store.entries import LOAD_COLUMNS, loaded_entry
from pioneer_grpc.store.history_state import (
    LOCKED_STATE,
    LOCKED_STATE_NAMES,
    HistoryRead,
    history_read_from,
    history_read_in,
    newer_entries,
)
from pioneer_grpc.store.round import CALL_ARRAYS, LockedTurn, lock_thread_read, lock_turn_with_entries
from pioneer_grpc.store.threads import thread_not_found
from pioneer_grpc.store.turns import TurnRecord
from pioneer_grpc.v1 import history_pb2

# PostgreSQL: a round's first statements in one round trip. The thread's row locked first, with
# the history's state (`lock_thread_read`); the turn created or touched from that row, so after
# the lock, with the manifest recorded on it (`record_in`); the batch inserted when the thread's
# model is `:b_counted_model` and the row locked is the one the snapshot read (`FRESH`:
# store/history_state.py says why that suffices). The upsert decides, on the row it locked,
# whether the turn holds this manifest already (its event id kept) or gets a new provisional one,
# and the event is inserted for a provisional id only; a fresh turn's row draws a provisional id
# even when the row exists: an unused number, never seen outside the transaction. Its rows: the
# head (`part` 0: the state, the turn's record, what it created, the thread's calls asked for),
# then the completed entries after `:b_after` (1), then the turn's entries (2), each part oldest
# first; what it read of entries and calls is from its snapshot, before its insert.
_ENTRY_NAMES = tuple(column.key for column in LOAD_COLUMNS)
# The head's columns besides `part` and the entry columns: the state, the turn's record, 4 arrays.
_HEAD_COLUMNS = len(LOCKED_STATE_NAMES) + 2 + 4


def _padded(part: int) -> tuple[str, ...]:
    """A later part's first columns: `part`, then NULL for each of the head's."""
    return (str(part), *["NULL"] * _HEAD_COLUMNS)


_ROUND_OPENED_PG = Direct(
    text(
        f"""
    WITH locked AS (
        {LOCKED_STATE}
    ), turn AS (
        INSERT INTO turns (
            thread_id, turn_id, status, created_at, updated_at, prompt_manifest_json,
            prompt_compiler_version, prompt_profile, prompt_fingerprint_stable,
            prompt_fingerprint_dynamic, prompt_fingerprint_full, manifest_event_id
        )
        SELECT
            :b_thread_id, :b_turn_id, :b_status, :b_updated_at, :b_updated_at, :b_json,
            :b_version, :b_profile, :b_stable, :b_dynamic, :b_full,
            -nextval('manifest_events_provisional_id_seq')
        FROM locked
        ON CONFLICT (thread_id, turn_id) DO UPDATE SET
            updated_at = excluded.updated_at,
            prompt_manifest_json = excluded.prompt_manifest_json,
            prompt_compiler_version = excluded.prompt_compiler_version,
            prompt_profile = excluded.prompt_profile,
            prompt_fingerprint_stable = excluded.prompt_fingerprint_stable,
            prompt_fingerprint_dynamic = excluded.prompt_fingerprint_dynamic,
            prompt_fingerprint_full = excluded.prompt_fingerprint_full,
            manifest_event_id = CASE
                WHEN turns.manifest_event_id IS NOT NULL
                    AND turns.prompt_manifest_json = excluded.prompt_manifest_json
                THEN turns.manifest_event_id
                ELSE -nextval('manifest_events_provisional_id_seq')
            END
        RETURNING status, manifest_event_id
    ), event AS (
        INSERT INTO manifest_events (id, thread_id, turn_id, manifest_pb, created_at)
        SELECT manifest_event_id, :b_thread_id, :b_turn_id, :b_manifest_pb, :b_updated_at
        FROM turn WHERE manifest_event_id < 0
    ), {LOCKED_APPEND_CTES}
    SELECT
        0 AS part, {", ".join(f"locked.{name}" for name in LOCKED_STATE_NAMES)},
        turn.status, turn.manifest_event_id,
        ARRAY(SELECT id FROM created ORDER BY id) AS created_ids,
        ARRAY(SELECT entry_id FROM created ORDER BY id) AS created_entry_ids,
        {CALL_ARRAYS},
        {", ".join(f"NULL AS {name}" for name in _ENTRY_NAMES)}
    FROM locked CROSS JOIN turn
    UNION ALL
    {newer_entries(*_padded(1))}
    UNION ALL
    SELECT {", ".join((*_padded(2), *(f"e.{name}" for name in _ENTRY_NAMES)))}
    FROM conversation_entries AS e WHERE e.thread_id = :b_thread_id AND e.turn_id = :b_turn_id
    ORDER BY part, id
    """
    ),
    dialects=(POSTGRESQL,),
)


@dataclass(frozen=True)
class OpenedRound:
    """What a round's first statements read and wrote (`round_opened`)."""

    # The history's state, under the thread's lock, leaving the round's turn out.
    read: HistoryRead
    # The turn as recorded, with its entries and the thread's calls from before the batch's insert.
    turn: LockedTurn
    recorded: Recorded
    # The batch's entries the statement inserted (entry_id -> sequence), or None: the append's to do.
    inserted: dict[str, int] | None


def round_opened(
    conn: Connection,
    prepared: PreparedManifest,
    after: int,
    call_ids: Sequence[str],
    batch: Batch | None,
    counted_model: str | None,
    *,
    postgres: bool,
) -> OpenedRound:
    """A round's first statements, on the manifest's thread and turn: `lock_thread_read` (the
    completed entries after sequence `after`, the turn left out), then `lock_turn_with_entries`
    with the manifest recorded on the turn (`record_in`); the turn's record as the recording left
    it.

    On PostgreSQL one statement, which inserts `batch` (entries of the turn, counted in the
    tokenizer of `counted_model`) when that is the thread's model and the statement did not wait
    for a lock whose holder changed the thread; when it did wait so, what it read is read again.
    On SQLite nothing of the batch is inserted here."""
    if not postgres:
        read = lock_thread_read(conn, prepared.thread_id, prepared.turn_id, after)
        turn, recorded = turn_recorded_separately(conn, prepared, call_ids)
        return OpenedRound(read, turn, recorded, None)
    return round_opened_in_one(conn, prepared, after, call_ids, batch, counted_model)


def turn_recorded_separately(
    conn: Connection, prepared: PreparedManifest, call_ids: Sequence[str]
) -> tuple[LockedTurn, Recorded]:
    """The turn's statements, then the record's (the thread locked already)."""
    turn = lock_turn_with_entries(conn, prepared.thread_id, prepared.turn_id, call_ids)
    recorded = record_in(conn, prepared, turn.record, postgres=conn.dialect.name == "postgresql")
    record = TurnRecord(turn.record.status, prepared.as_json, recorded.event_id)
    return replace(turn, record=record), recorded


def round_opened_in_one(
    conn: Connection,
    prepared: PreparedManifest,
    after: int,
    call_ids: Sequence[str],
    batch: Batch | None = None,
    counted_model: str | None = None,
) -> OpenedRound:
    """PostgreSQL's `round_opened`: one statement, and statements to read again after a wait."""
    thread_id, turn_id = prepared.thread_id, prepared.turn_id
    created = now()
    params = {
        **batch_params(thread_id, batch),
        **turn_columns(prepared, created),
        "b_status": history_pb2.TURN_STATUS_IN_PROGRESS,
        "b_call_ids": list(call_ids),
        "b_after": after,
        "b_counted_model": counted_model if batch is not None else None,
    }
    rows = _ROUND_OPENED_PG.rows(conn, params)
    if not rows or rows[0].part != 0:
        raise thread_not_found(thread_id)
    head = rows[0]
    event_id: int = head.manifest_event_id
    record = TurnRecord(head.status, prepared.as_json, event_id)
    recorded = Recorded(event_id, new_event(event_id, prepared, created) if event_id < 0 else None)
    if not head.fresh:
        read = history_read_in(conn, thread_id, turn_id, after)
        again = lock_turn_with_entries(conn, thread_id, turn_id, call_ids)
        return OpenedRound(read, replace(again, record=record), recorded, None)
    read = history_read_from(head, [row for row in rows if row.part == 1], turn_id, after)
    turn = LockedTurn(
        record,
        [loaded_entry(row) for row in rows if row.part == 2],
        dict(zip(head.call_ids, head.call_entry_ids, strict=True)),
    )
    inserted = None
    if batch is not None and head.model == counted_model:
        inserted = dict(zip(head.created_entry_ids, head.created_ids, strict=True))
    return OpenedRound(read, turn, recorded, inserted)
