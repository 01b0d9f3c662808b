"""The store port on PostgreSQL: what SQLite does in several statements, one statement here.

Each statement is a network round trip, so the steps of an operation are one statement
of data-modifying CTEs: an append's lock, turn, insert (and completion); a completion's
lock and writes; a round's whole read (`open_round_in`) and its whole write
(`commit_round`, a statement alone: no BEGIN, no COMMIT). A statement that locks the
thread's row may have waited for the lock while its snapshot predates what the lock's
holder committed; the appends and completions tell it (`FRESH`, store/history_state.py)
and read again, a round's commit compares the row's version with the one its open read
(`xmin`: every write of what a round reads writes the row) and writes nothing when they
differ. The contract suite (tests/store/contract/) holds every answer and every row left
equal to SQLite's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select, text
from sqlalchemy.engine import Connection

from pioneer_grpc.store import token_counts
from pioneer_grpc.store.append import Batch, batch_of
from pioneer_grpc.store.clock import now
from pioneer_grpc.store.driver import POSTGRESQL, Direct
from pioneer_grpc.store.entries import HELD_COLUMNS, LOAD_COLUMNS, held_entry, loaded_entry
from pioneer_grpc.store.history_state import (
    FRESH,
    VERSIONED_STATE,
    VERSIONED_STATE_NAMES,
    history_read_from,
    newer_entries,
)
from pioneer_grpc.store.manifests import id_setting, new_event, numbered, turn_columns
from pioneer_grpc.store.models import ThreadRow
from pioneer_grpc.store.port import (
    Conflict,
    OpenedRound,
    Recorded,
    RoundAsk,
    RoundCommit,
    RoundPrepared,
    StoredEntry,
    TurnRecord,
)
from pioneer_grpc.store.round_usage import PREPARED_COLUMNS, ROUND_INDEX, prepared_values
from pioneer_grpc.store.sql import LockedTurn, SqlStore
from pioneer_grpc.store.threads import thread_not_found, turn_not_found
from pioneer_grpc.v1 import history_pb2

IN_PROGRESS = history_pb2.TURN_STATUS_IN_PROGRESS
COMPLETED = history_pb2.TURN_STATUS_COMPLETED

# ---- an append's statements -------------------------------------------------------------------

# The entry columns an append writes from its batch, in `entry_values`' order, and their types.
_BATCH_COLUMNS = (
    ("entry_id", "varchar"),
    ("turn_id", "varchar"),
    ("role", "integer"),
    ("content", "text"),
    ("tool_calls_json", "text"),
    ("tool_call_id", "varchar"),
    ("name", "varchar"),
    ("artifact_refs_json", "text"),
    ("reasoning_content", "text"),
    ("content_parts_pb", "bytea"),
    ("is_error", "boolean"),
    ("content_hash", "varchar"),
    ("token_count", "integer"),
)
_BATCH_NAMES = ", ".join(name for name, _ in _BATCH_COLUMNS)
# Its arrays' parameters are named `a_...`: a round's statement has a scalar `b_turn_id` too.
_BATCH_ARRAYS = ", ".join(f"CAST(:a_{name} AS {kind}[])" for name, kind in _BATCH_COLUMNS)


def append_ctes(fresh_turns: str, guard: str = "true", complete_turn: bool = False) -> str:
    """What SQLite's append writes do (store/sqlite.py `inserted`), as the CTEs `batch`, `created`
    (RETURNING id, entry_id, turn_id), `calls` and `touched`: the batch as arrays, one row an
    entry; `fresh_turns` the array of the turns the batch opens; nothing inserted unless `guard`.

    With `complete_turn`, the batch's one turn, `:b_turn_id`, is completed with it, as a
    completion after an append would: its new entries are inserted completed, the entries it
    held are completed by `completed_before` (RETURNING id, none unless `guard` holds), and
    `touched` moves both into the thread's completed count (a statement updates a row once)."""
    completed = "true" if complete_turn else "false"
    entries_created = f"""batch AS (
        SELECT * FROM unnest({_BATCH_ARRAYS}) WITH ORDINALITY AS b({_BATCH_NAMES}, ord)
    ), created AS (
        INSERT INTO conversation_entries (
            thread_id, tenant, {_BATCH_NAMES}, tokenizer, completed, created_at
        )
        SELECT :b_thread_id, :b_tenant, {_BATCH_NAMES}, :b_tokenizer, {completed}, :b_moment
            FROM batch WHERE {guard}
        ORDER BY ord
        ON CONFLICT (thread_id, entry_id, tenant) DO NOTHING
        RETURNING id, entry_id, turn_id
    ), calls AS (
        INSERT INTO tool_calls (thread_id, tenant, call_id, entry_id)
        SELECT :b_thread_id, :b_tenant, c.call_id, c.entry_id
        FROM unnest(CAST(:a_call_ids AS varchar[]), CAST(:a_call_entry_ids AS varchar[]))
            WITH ORDINALITY AS c(call_id, entry_id, ord)
        WHERE c.entry_id IN (SELECT entry_id FROM created)
        ORDER BY c.ord
        ON CONFLICT (thread_id, call_id, entry_id, tenant) DO NOTHING
    )"""
    opened = f"(SELECT count(DISTINCT turn_id) FROM created WHERE turn_id = ANY({fresh_turns}))"
    if not complete_turn:
        return f"""{entries_created}, touched AS (
        UPDATE threads SET
            updated_at = :b_moment,
            open_entries = open_entries + (SELECT count(*) FROM created),
            open_turns = open_turns + {opened}
        WHERE thread_id = :b_thread_id AND tenant = :b_tenant AND EXISTS (SELECT FROM created)
    )"""
    # The append's counts and the completion's at once: the created entries open and close again,
    # those held close; the turn opens with the batch when it held none, and closes unless it has
    # no entry at all (a turn without entries is not counted open).
    return f"""{entries_created}, completed_before AS (
        UPDATE conversation_entries SET completed = true
        WHERE thread_id = :b_thread_id AND tenant = :b_tenant AND turn_id = :b_turn_id AND {guard}
        RETURNING id
    ), touched AS (
        UPDATE threads SET
            updated_at = CASE WHEN EXISTS (SELECT FROM created) THEN :b_moment ELSE updated_at END,
            open_entries = open_entries - (SELECT count(*) FROM completed_before),
            open_turns = open_turns + {opened} - 1,
            completed_entries = completed_entries
                + (SELECT count(*) FROM completed_before) + (SELECT count(*) FROM created)
        WHERE thread_id = :b_thread_id AND tenant = :b_tenant
            AND (EXISTS (SELECT FROM created) OR EXISTS (SELECT FROM completed_before))
    )"""


TURN_OPENS = (
    "ARRAY(SELECT CAST(:b_turn_id AS varchar) WHERE NOT EXISTS ("
    "SELECT FROM conversation_entries"
    " WHERE thread_id = :b_thread_id AND tenant = :b_tenant AND turn_id = :b_turn_id))"
)


def batch_params(tenant: str, thread_id: str, batch: Batch | None) -> dict[str, Any]:
    """The append CTEs' parameters for `batch` (None: no entries, nothing written)."""
    rows = batch.rows if batch is not None else []
    calls = batch.calls if batch is not None else []
    tokenizers = {row["tokenizer"] for row in rows}
    assert len(tokenizers) <= 1, "a batch is counted in one tokenizer"
    params: dict[str, Any] = {f"a_{name}": [row[name] for row in rows] for name, _ in _BATCH_COLUMNS}
    params.update(
        b_thread_id=thread_id,
        b_tenant=tenant,
        b_tokenizer=tokenizers.pop() if tokenizers else "",
        b_moment=batch.moment if batch is not None else now(),
        a_call_ids=[call["call_id"] for call in calls],
        a_call_entry_ids=[call["entry_id"] for call in calls],
    )
    return params


_INSERT_ALL = Direct(
    text(f"WITH {append_ctes('CAST(:b_fresh_turns AS varchar[])')}\n    SELECT id, entry_id FROM created"),
    dialects=(POSTGRESQL,),
)
# The append's CTEs for one turn, `:b_turn_id`, in a statement whose CTE `locked` locks the
# thread's row (`model`, and `fresh`: store/history_state.py FRESH) and which writes the turn's row
# from it: the batch, counted in the tokenizer of `:b_counted_model`, is inserted only when that is
# the thread's model and the statement's snapshot is the newest (then it holds every entry
# committed, and the turn opens with the batch when it holds none of the turn's). The entries
# created are `created`'s rows.
LOCKED_GUARD = "(SELECT fresh AND model = :b_counted_model FROM locked)"
LOCKED_APPEND_CTES = append_ctes(TURN_OPENS, LOCKED_GUARD)
# The same, completing the turn with the batch (CompleteTurn carrying entries): the guard holds
# only when the statement's CTE `turn` answered the turn's row, which it does unless the turn was
# completed already (then nothing is inserted or completed, and the caller does it all after).
LOCKED_COMPLETING_CTES = append_ctes(
    TURN_OPENS, f"{LOCKED_GUARD} AND EXISTS (SELECT FROM turn)", complete_turn=True
)

_LOCK_THREAD = Direct(
    select(ThreadRow.model)
    .where(ThreadRow.thread_id == bindparam("b_thread_id"), ThreadRow.tenant == bindparam("b_tenant"))
    .with_for_update(),
    dialects=(POSTGRESQL,),
)

_LOAD_NAMES = ", ".join(f"e.{column.key}" for column in LOAD_COLUMNS)
_OF_CALL_IDS = (
    "FROM tool_calls WHERE thread_id = :b_thread_id AND tenant = :b_tenant"
    " AND call_id = ANY(CAST(:b_call_ids AS varchar[]))"
)
# The thread's calls of `:b_call_ids` as two columns of arrays, the ids and the entries that made
# them, in one order.
CALL_ARRAYS = f"""ARRAY(SELECT call_id {_OF_CALL_IDS} ORDER BY call_id, entry_id) AS call_ids,
        ARRAY(SELECT entry_id {_OF_CALL_IDS} ORDER BY call_id, entry_id) AS call_entry_ids"""


def _turn_calls_and_entries(source: str) -> str:
    """The end of a statement whose CTE `turn` returns the turn's row (`source` its FROM): its calls
    asked for as two arrays, then each of its entries (none: one row, the entry columns NULL),
    oldest first."""
    return f"""
        {CALL_ARRAYS},
        {_LOAD_NAMES}
    FROM {source}
    LEFT JOIN conversation_entries AS e ON e.thread_id = :b_thread_id AND e.tenant = :b_tenant
        AND e.turn_id = :b_turn_id
    ORDER BY e.id
"""


def _insert_turn(source: str) -> str:
    """The turn's row created or touched (so locked), from the one row of `source`."""
    return f"""
        INSERT INTO turns (thread_id, tenant, turn_id, status, created_at, updated_at)
        SELECT :b_thread_id, :b_tenant, :b_turn_id, :b_status, :b_moment, :b_moment FROM {source}
        ON CONFLICT (thread_id, turn_id, tenant) DO UPDATE SET updated_at = excluded.updated_at
        RETURNING status, prompt_manifest_json, manifest_event_id"""


# `_insert_turn` from `locked`, completing the turn when the batch goes in (LOCKED_GUARD: the row
# is fresh and the thread's model the one the batch was counted for): created completed, or
# touched and completed. A RETURNING gives the row as written, not the status before; so a turn
# completed already is locked but not written then, and answers no row (ON CONFLICT's WHERE).
# Otherwise it is as `_insert_turn`.
_INSERT_COMPLETING_TURN = f"""
        INSERT INTO turns (thread_id, tenant, turn_id, status, created_at, updated_at)
        SELECT
            :b_thread_id, :b_tenant, :b_turn_id,
            CASE WHEN {LOCKED_GUARD} THEN CAST(:b_completed AS integer) ELSE CAST(:b_status AS integer) END,
            :b_moment, :b_moment
        FROM locked
        ON CONFLICT (thread_id, turn_id, tenant) DO UPDATE SET
            updated_at = excluded.updated_at,
            status = CASE WHEN excluded.status = :b_completed THEN excluded.status ELSE turns.status END
        WHERE turns.status <> :b_completed OR excluded.status <> :b_completed
        RETURNING status, prompt_manifest_json, manifest_event_id"""

# SQLite's turn statements in one round trip: the turn's row (created or touched, so locked) with
# each of its entries (none: one row, the entry columns NULL), the calls as two arrays in the row.
# The thread's lock came first, in a statement of its own: this one's snapshot has every entry
# committed before the lock was granted.
_TURN_CALLS_AND_ENTRIES = _turn_calls_and_entries("turn")
_LOCK_TURN_WITH_ENTRIES = Direct(
    text(
        f"""
    WITH turn AS ({_insert_turn("(VALUES (1)) AS one")}
    )
    SELECT
        turn.status, turn.prompt_manifest_json, turn.manifest_event_id,{_TURN_CALLS_AND_ENTRIES}    """
    ),
    dialects=(POSTGRESQL,),
)


def _lock_thread_and_turn(turn: str, ctes: str, source: str) -> Direct:
    """The statement of `lock_thread_and_turn`: `locked`, the CTE `turn` (`turn` its statement),
    `ctes` (the append's, with `locked` and `turn` to read), then the turn's row from `source`."""
    turn_row = _turn_calls_and_entries(source)
    return Direct(
        text(
            f"""
    WITH locked AS (
        SELECT model, {FRESH} AS fresh FROM threads WHERE thread_id = :b_thread_id
            AND tenant = :b_tenant FOR UPDATE
    ), turn AS ({turn}
    ), {ctes}
    SELECT
        locked.model, locked.fresh, turn.status, turn.prompt_manifest_json, turn.manifest_event_id,
        ARRAY(SELECT id FROM created ORDER BY id) AS created_ids,
        ARRAY(SELECT entry_id FROM created ORDER BY id) AS created_entry_ids,{turn_row}    """
        ),
        dialects=(POSTGRESQL,),
    )


# The thread's lock and `_LOCK_TURN_WITH_ENTRIES` in one round trip: the thread's row locked first
# (the turn's row is written only from its row), its model, and whether the row locked is the one
# the statement's snapshot read (`FRESH`). The turn's row is created or touched on the newest rows
# whichever way; what the snapshot read of its entries and calls is read again when the row is not
# fresh. With a batch of entries of that turn, counted in the tokenizer of `:b_counted_model`, it
# inserts them too when the row is fresh and that is the thread's model (else the append inserts
# them after it); the turn's entries and calls it answers are then those from before its insert.
_LOCK_THREAD_AND_TURN = _lock_thread_and_turn(
    _insert_turn("locked"), LOCKED_APPEND_CTES, "locked CROSS JOIN turn"
)
# The same, completing the turn with the batch (CompleteTurn carrying entries): when it inserts the
# batch, it completes the turn, its new entries and those it held, and moves the thread's counts
# as the append and the completion would (LOCKED_COMPLETING_CTES). When it does not (a row not
# fresh, another model, a turn completed already: `turn` answers no row), it completes nothing, and
# the append and the completion run after it as they would.
_LOCK_THREAD_TURN_AND_COMPLETE = _lock_thread_and_turn(
    _INSERT_COMPLETING_TURN, LOCKED_COMPLETING_CTES, "locked LEFT JOIN turn ON true"
)


def _turn_params(tenant: str, thread_id: str, turn_id: str, call_ids: Sequence[str]) -> dict[str, Any]:
    return {
        "b_thread_id": thread_id,
        "b_tenant": tenant,
        "b_turn_id": turn_id,
        "b_status": IN_PROGRESS,
        "b_moment": now(),
        "b_call_ids": list(call_ids),
    }


def _locked_turn(rows: list[Any], created: int | None = None) -> LockedTurn:
    """The turn as the statement's rows give it. `created`: the entries the statement created as it
    completed the turn; the turn is then answered as it was before (in progress), its count set."""
    first = rows[0]
    entries = [loaded_entry(row) for row in rows if row.id is not None]
    status = first.status if created is None else IN_PROGRESS
    return LockedTurn(
        TurnRecord(status, first.prompt_manifest_json, first.manifest_event_id),
        entries,
        dict(zip(first.call_ids, first.call_entry_ids, strict=True)),
        None if created is None else len(entries) + created,
    )


# ---- a completion's statements ----------------------------------------------------------------


def _complete(locked: str, guard: str, source: str) -> str:
    """A completion: `locked` the CTEs before it, `guard` a condition on each write and read, `source`
    the FROM of its one row."""
    return f"""
    WITH {locked}turn AS (
        SELECT status FROM turns WHERE thread_id = :b_thread_id AND tenant = :b_tenant
            AND turn_id = :b_turn_id{guard}
    ), done AS (
        UPDATE turns SET status = :b_status, updated_at = :b_updated_at
        WHERE thread_id = :b_thread_id AND tenant = :b_tenant AND turn_id = :b_turn_id
            AND status <> :b_status{guard}
        RETURNING turn_id
    ), completed AS (
        UPDATE conversation_entries SET completed = true
        WHERE thread_id = :b_thread_id AND tenant = :b_tenant AND turn_id = :b_turn_id
            AND EXISTS (SELECT FROM done)
        RETURNING id
    ), less_open AS (
        UPDATE threads
        SET
            open_entries = open_entries - (SELECT count(*) FROM completed),
            open_turns = open_turns - 1,
            completed_entries = completed_entries + (SELECT count(*) FROM completed)
        WHERE thread_id = :b_thread_id AND tenant = :b_tenant AND EXISTS (SELECT FROM completed)
    )
    SELECT
        (SELECT status FROM turn) AS status,
        CASE WHEN EXISTS (SELECT FROM done) THEN (SELECT count(*) FROM completed)
        ELSE (
            SELECT count(*) FROM conversation_entries
            WHERE thread_id = :b_thread_id AND tenant = :b_tenant AND turn_id = :b_turn_id
        ) END AS entry_count{source}
    """


_COMPLETE = Direct(text(_complete("", "", "")), dialects=(POSTGRESQL,))
# The thread's lock and `_COMPLETE` in one round trip: the thread's row locked first (every write
# and read of the turn waits for it), and whether the row locked is the one the statement's
# snapshot read (`FRESH`). Not fresh, it writes nothing and reads no status, and `_COMPLETE` runs
# after it; so it does for a turn not found, which may have been created since the snapshot (a
# turn without entries leaves the thread's row alone).
_LOCK_AND_COMPLETE = Direct(
    text(
        _complete(
            f"""locked AS (
        SELECT {FRESH} AS fresh FROM threads WHERE thread_id = :b_thread_id AND tenant = :b_tenant FOR UPDATE
    ), """,
            " AND (SELECT fresh FROM locked)",
            "\n    FROM locked",
        )
    ),
    dialects=(POSTGRESQL,),
)


def _completion_params(tenant: str, thread_id: str, turn_id: str) -> dict[str, object]:
    return {
        "b_thread_id": thread_id,
        "b_tenant": tenant,
        "b_turn_id": turn_id,
        "b_status": COMPLETED,
        "b_updated_at": now(),
    }


# ---- a round's statements ---------------------------------------------------------------------

_ENTRY_NAMES = tuple(column.key for column in LOAD_COLUMNS)
# What a held entry adds to a loaded one (an append's repeat check and conflict report need it).
_STORED_NAMES = tuple(c.key for c in HELD_COLUMNS if c.key not in _ENTRY_NAMES)
# The head's columns besides `part` and the entry columns: the state, the turn's row, 2 arrays.
_HEAD_COLUMNS = len(VERSIONED_STATE_NAMES) + 3 + 2


def _padded(part: int) -> tuple[str, ...]:
    """A later part's first columns: `part`, then NULL for each of the head's."""
    return (str(part), *["NULL"] * _HEAD_COLUMNS)


# Typed: a UNION resolves an untyped NULL column as text before it meets the part that has values.
_STORED_TYPES = {"content_hash": "varchar", "reasoning_content": "text"}
_NULL_STORED = tuple(f"CAST(NULL AS {_STORED_TYPES[name]})" for name in _STORED_NAMES)
_NO_STORED = tuple(f"{null} AS {name}" for null, name in zip(_NULL_STORED, _STORED_NAMES, strict=True))

# A round's reads in one round trip, holding nothing: the thread's state and version with what a
# load leaves out (`VERSIONED_STATE`), the turn's row, the thread's calls of `:b_call_ids` (the head,
# part 0); the completed entries after `:b_after` (part 1); the turn's entries (part 2); the
# thread's entries of `:b_entry_ids`, in any turn, with what a repeat is checked against (part 3);
# each part oldest first. One statement is one snapshot: the version and every row agree.
_OPEN_ROUND = Direct(
    text(
        f"""
    WITH thread AS (
        {VERSIONED_STATE}
    ), turn AS (
        SELECT status, prompt_manifest_json, manifest_event_id FROM turns
        WHERE thread_id = :b_thread_id AND tenant = :b_tenant AND turn_id = :b_turn_id
    )
    SELECT
        0 AS part, {", ".join(f"thread.{name}" for name in VERSIONED_STATE_NAMES)},
        turn.status, turn.prompt_manifest_json, turn.manifest_event_id,
        {CALL_ARRAYS},
        {", ".join(f"NULL AS {name}" for name in _ENTRY_NAMES)}, {", ".join(_NO_STORED)}
    FROM thread LEFT JOIN turn ON true
    UNION ALL
    {newer_entries(_padded(1), _NULL_STORED)}
    UNION ALL
    SELECT {", ".join((*_padded(2), *(f"e.{name}" for name in _ENTRY_NAMES), *_NULL_STORED))}
    FROM conversation_entries AS e WHERE e.thread_id = :b_thread_id AND e.tenant = :b_tenant
        AND e.turn_id = :b_turn_id
    UNION ALL
    SELECT {", ".join((*_padded(3), *(f"e.{name}" for name in (*_ENTRY_NAMES, *_STORED_NAMES))))}
    FROM conversation_entries AS e
    WHERE e.thread_id = :b_thread_id AND e.tenant = :b_tenant
        AND e.entry_id = ANY(CAST(:b_entry_ids AS varchar[]))
    ORDER BY part, id
    """
    ),
    dialects=(POSTGRESQL,),
)

# The round's row on the thread's timeline (store/round_usage.py) from the CTE `turn`: keyed by the
# turn's event id, which the commit's trigger renumbers in it too when it is provisional (migration
# 0022); its other values are the parameters `r_...` (round_usage.prepared_values).
_OF_STATEMENT = {
    "thread_id": ":b_thread_id",
    "tenant": ":b_tenant",
    "turn_id": ":b_turn_id",
    "manifest_event_id": "manifest_event_id",
    "prepared_at": ":b_updated_at",
}
_ROUND_VALUES = tuple(_OF_STATEMENT.get(name, f":r_{name}") for name in PREPARED_COLUMNS)

# A round's writes in one statement alone, when the thread's row is the version the round's open
# read (`:b_version`) and its turn has the status it read: the turn created or touched with the
# manifest recorded on it (a new provisional event id unless it holds this very manifest: the
# commit draws the real one, store/manifests.py), the event, the round's row unless the round has
# one (with `:r_write`), and the entries (the append's CTEs, `:b_fresh_turns` the turn when it
# opens with them). Its row: whether it wrote, the turn's event id.
_COMMIT_ROUND = Direct(
    text(
        f"""
    WITH locked AS (
        SELECT CAST(xmin AS text) = :b_version AS same FROM threads WHERE thread_id = :b_thread_id
            AND tenant = :b_tenant FOR UPDATE
    ), held AS (
        SELECT status FROM turns WHERE thread_id = :b_thread_id AND tenant = :b_tenant
            AND turn_id = :b_turn_id FOR UPDATE
    ), go AS (
        SELECT locked.same AND coalesce((SELECT status FROM held), :b_status) = :b_turn_status AS ok
        FROM locked
    ), turn AS (
        INSERT INTO turns (
            thread_id, tenant, turn_id, status, created_at, updated_at, prompt_manifest_json,
            prompt_compiler_version, prompt_profile, prompt_fingerprint_stable,
            prompt_fingerprint_dynamic, prompt_fingerprint_full, manifest_event_id
        )
        SELECT
            :b_thread_id, :b_tenant, :b_turn_id, :b_status, :b_updated_at, :b_updated_at, :b_json,
            :b_compiler_version, :b_profile, :b_stable, :b_dynamic, :b_full,
            -nextval('manifest_events_provisional_id_seq')
        FROM go WHERE go.ok
        ON CONFLICT (thread_id, turn_id, tenant) DO UPDATE SET
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
        RETURNING manifest_event_id
    ), event AS (
        INSERT INTO manifest_events (id, thread_id, tenant, turn_id, manifest_pb, created_at)
        SELECT manifest_event_id, :b_thread_id, :b_tenant, :b_turn_id, :b_manifest_pb, :b_updated_at
        FROM turn WHERE manifest_event_id < 0
    ), round AS (
        INSERT INTO round_usage ({", ".join(PREPARED_COLUMNS)})
        SELECT {", ".join(_ROUND_VALUES)} FROM turn WHERE :r_write
        ON CONFLICT ({", ".join(ROUND_INDEX)}) DO NOTHING
    ), texts AS (
        INSERT INTO section_texts (thread_id, tenant, fingerprint, text, created_at)
        SELECT :b_thread_id, :b_tenant, kept.fingerprint, kept.text, :b_updated_at
        FROM unnest(CAST(:b_text_fingerprints AS varchar[]), CAST(:b_texts AS text[]))
            AS kept(fingerprint, text)
        WHERE (SELECT ok FROM go)
        ON CONFLICT DO NOTHING
    ), {append_ctes("CAST(:b_fresh_turns AS varchar[])", "(SELECT ok FROM go)")}
    SELECT go.ok, turn.manifest_event_id FROM go LEFT JOIN turn ON true
    """
    ),
    dialects=(POSTGRESQL,),
)


class PostgresStore(SqlStore):
    postgres = True

    def lock_thread(self, conn: Connection, thread_id: str) -> str:
        row = _LOCK_THREAD.first(conn, {"b_thread_id": thread_id, "b_tenant": self.tenant})
        if row is None:
            raise thread_not_found(thread_id)
        model: str = row.model
        return model

    def lock_thread_and_turn(
        self,
        conn: Connection,
        thread_id: str,
        turn_id: str,
        call_ids: Sequence[str],
        batch: Batch | None,
        counted_model: str | None,
        complete: bool,
    ) -> tuple[str, LockedTurn, dict[str, int] | None]:
        """One statement; the turn read again after it only when it waited for a lock whose holder
        changed the thread. It inserts `batch` when the thread's model is `counted_model` and it did
        not wait so (the third value then says what it created); with `complete` (and a batch) it
        completes the turn too (the turn answered as it was before, `completed` set). A turn
        completed already is neither inserted into nor completed: the turn is read again."""
        params = {
            **_turn_params(self.tenant, thread_id, turn_id, call_ids),
            **batch_params(self.tenant, thread_id, batch),
            "b_counted_model": counted_model if batch is not None else None,
        }
        complete = complete and batch is not None
        if complete:
            params["b_completed"] = COMPLETED
        statement = _LOCK_THREAD_TURN_AND_COMPLETE if complete else _LOCK_THREAD_AND_TURN
        rows = statement.rows(conn, params)
        if not rows:
            raise thread_not_found(thread_id)
        first = rows[0]
        model: str = first.model
        goes_in = batch is not None and first.model == counted_model
        if not first.fresh or (complete and goes_in and first.status is None):
            return model, self.lock_turn_with_entries(conn, thread_id, turn_id, call_ids), None
        if not goes_in:
            return model, _locked_turn(rows), None
        inserted = dict(zip(first.created_entry_ids, first.created_ids, strict=True))
        return model, _locked_turn(rows, len(inserted) if complete else None), inserted

    def lock_turn_with_entries(
        self, conn: Connection, thread_id: str, turn_id: str, call_ids: Sequence[str]
    ) -> LockedTurn:
        params = _turn_params(self.tenant, thread_id, turn_id, call_ids)
        return _locked_turn(_LOCK_TURN_WITH_ENTRIES.rows(conn, params))

    def inserted(
        self, conn: Connection, thread_id: str, batch: Batch, fresh_turns: list[str]
    ) -> dict[str, int]:
        params = batch_params(self.tenant, thread_id, batch)
        params.update(b_fresh_turns=fresh_turns)
        return {row.entry_id: row.id for row in _INSERT_ALL.rows(conn, params)}

    def completed_under_lock(self, conn: Connection, thread_id: str, turn_id: str) -> int:
        row = _COMPLETE.first(conn, _completion_params(self.tenant, thread_id, turn_id))
        if row.status is None:
            raise turn_not_found(thread_id, turn_id)
        return int(row.entry_count)

    def completed_alone(self, conn: Connection, thread_id: str, turn_id: str) -> int | None:
        """`_LOCK_AND_COMPLETE` alone: the turn's entry count, or None when it wrote nothing because
        it waited for a lock whose holder changed the thread or found no such turn (then
        `complete_in`, in a transaction, completes or says NotFound)."""
        row = _LOCK_AND_COMPLETE.first(conn, _completion_params(self.tenant, thread_id, turn_id))
        if row is None:
            raise thread_not_found(thread_id)
        return int(row.entry_count) if row.status is not None else None

    def complete_in(self, conn: Connection, thread_id: str, turn_id: str) -> int:
        count = self.completed_alone(conn, thread_id, turn_id)
        if count is not None:
            return count
        return self.completed_under_lock(conn, thread_id, turn_id)

    def open_round_in(self, conn: Connection, ask: RoundAsk) -> OpenedRound:
        thread_id, turn_id = ask.thread_id, ask.turn_id
        params = {
            "b_thread_id": thread_id,
            "b_tenant": self.tenant,
            "b_turn_id": turn_id,
            "b_after": ask.history.after,
            "b_call_ids": list(ask.call_ids),
            "b_entry_ids": list(ask.entry_ids),
        }
        rows = _OPEN_ROUND.rows(conn, params)
        if not rows or rows[0].part != 0:
            raise thread_not_found(thread_id)
        head = rows[0]
        read = history_read_from(head, [row for row in rows if row.part == 1], turn_id, ask.history.after)
        turn = None
        if head.status is not None:
            turn = TurnRecord(head.status, head.prompt_manifest_json, head.manifest_event_id)
        stored = {
            row.entry_id: StoredEntry(held_entry(row), row.content_hash) for row in rows if row.part == 3
        }
        return OpenedRound(
            self.read_in(conn, ask.history, read),
            turn,
            [loaded_entry(row) for row in rows if row.part == 2],
            dict(zip(head.call_ids, head.call_entry_ids, strict=True)),
            stored,
            head.version,
        )

    def commit_in(
        self, conn: Connection, commit: RoundCommit, sent: asyncio.Future[None] | None = None
    ) -> Recorded | Conflict:
        """The round's writes in one statement (`_COMMIT_ROUND`), the counts a load made first (kept
        whether or not the round commits: they are true either way). Its event id is provisional
        until the statement's commit draws it (`numbered`)."""
        if commit.counts:
            counts = commit.counts
            token_counts.store_in(conn, counts.tokenizer, dict(counts.entries), counts.summary)
        tenant = self.tenant
        batch = (
            batch_of(tenant, commit.thread_id, commit.entries, commit.tokenizer) if commit.entries else None
        )
        created = now()
        params = {
            **batch_params(tenant, commit.thread_id, batch),
            **turn_columns(tenant, commit.manifest, created),
        }
        params["b_compiler_version"] = params.pop("b_version")  # the name the row's version takes
        params.update(
            b_version=commit.version,
            b_status=IN_PROGRESS,
            b_turn_status=IN_PROGRESS if commit.turn_status is None else commit.turn_status,
            b_fresh_turns=[commit.turn_id] if commit.opens_turn else [],
            b_text_fingerprints=[fingerprint for fingerprint, _ in commit.texts],
            b_texts=[value for _, value in commit.texts],
        )
        params.update(_round_params(tenant, commit, created))
        if sent is not None:
            sent.set_result(None)  # the statement goes out next, before the greenlet first waits
        row = _COMMIT_ROUND.first(conn, params)
        if row is None:  # no thread row to lock: deleted since the round was opened; nothing written
            raise thread_not_found(commit.thread_id)
        if not row.ok:
            return Conflict()
        event_id: int = row.manifest_event_id
        return Recorded(
            event_id, new_event(event_id, tenant, commit.manifest, created) if event_id < 0 else None
        )

    async def commit_round(self, commit: RoundCommit, sent: asyncio.Future[None]) -> Recorded | Conflict:
        """A statement alone: its own transaction, no BEGIN, no COMMIT; the event id drawn at its
        commit is announced with its answer."""
        recorded, committed_id = await self.runner.alone_announcing(
            lambda conn: self.commit_in(conn, commit, sent), _announced
        )
        return recorded if isinstance(recorded, Conflict) else numbered(recorded, committed_id)


_NO_ROUND = RoundPrepared(0, 0, "")


def _round_params(tenant: str, commit: RoundCommit, moment: datetime) -> dict[str, Any]:
    values = prepared_values(tenant, commit.thread_id, commit.turn_id, 0, commit.round or _NO_ROUND, moment)
    params = {f"r_{name}": value for name, value in values.items() if name not in _OF_STATEMENT}
    return {**params, "r_write": commit.round is not None}


def _announced(done: Recorded | Conflict) -> str:
    return "" if isinstance(done, Conflict) else id_setting(done)
