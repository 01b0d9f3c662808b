"""Persist a compile's manifest on its turn and append it to the durable event table.

Both writes happen in one transaction, so a turn never points at an event that
does not exist and an event never describes a turn that was not updated.

No gaps for observers: an observer that read id N resumes "after N", so no id
below N may become visible after N. SQLite has a single writer, so ids drawn in
the transaction are in commit order. On PostgreSQL sequence values can commit
out of order (txn A takes 5, txn B takes 6 and commits first), so the id is drawn
at commit instead (migration 0005): the event is inserted with a provisional
negative id, and a deferred trigger, inside COMMIT, takes a global advisory lock,
draws the id, renumbers the event and the turn's pointer and notifies the
listening replicas. The lock is released once the commit is visible, so a reader
that sees N sees every committed id below it; and it is held only inside the
server's COMMIT, never across the client's pauses between statements, so rounds
of every worker overlap up to their commits. The trigger leaves the id in the
session setting `EVENT_ID_SETTING` and announces it to the committing session in a
NOTICE that comes with the COMMIT's answer (migration 0012; `TransactionRunner.transact`
hands it over; `numbered` finishes the `Recorded`).

Retries do not duplicate: when the turn already holds exactly this manifest (a
PrepareTurn or CompilePrompt repeated for the same turn with the same compile),
the turn's existing event id is the answer and nothing is written or published.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.events.manifest_json import manifest_json
from pioneer_grpc.events.queries import EVENTS, TURNS
from pioneer_grpc.history.entries import id_violation
from pioneer_grpc.store.clock import now
from pioneer_grpc.store.driver import POSTGRESQL, SQLITE, Direct
from pioneer_grpc.store.runner import TransactionRunner, nothing
from pioneer_grpc.store.turns import TurnRecord, ensure_thread_in, lock_turn
from pioneer_grpc.store.work import run_to_end
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from pioneer_grpc.v1 import prompt_pb2

# pg_notify channel (the trigger of migration 0005 notifies); the payload is the event id.
NOTIFY_CHANNEL = "pioneer_manifest_events"
# Where that trigger leaves the id it drew, for the committing session to read.
EVENT_ID_SETTING = "pioneer.manifest_event_id"


def profile_name(profile: int) -> str:
    """`full`, `minimal` or `none`, as the original stores it; unspecified means full."""
    if profile == prompt_pb2.PROMPT_PROFILE_UNSPECIFIED:
        profile = prompt_pb2.PROMPT_PROFILE_FULL
    try:
        return prompt_pb2.PromptProfile.Name(profile).removeprefix("PROMPT_PROFILE_").lower()
    except ValueError:
        return str(profile)


def _check_ids(thread_id: str, turn_id: str) -> None:
    InvalidArgument.raise_if([id_violation("thread_id", thread_id), id_violation("turn_id", turn_id)])


@dataclass(frozen=True)
class PreparedManifest:
    """A manifest as it will be stored, encoded before the transaction that holds its turn's row."""

    thread_id: str
    turn_id: str
    manifest: prompt_pb2.PromptManifest
    encoded: bytes
    as_json: str


@dataclass(frozen=True)
class Recorded:
    # Negative (provisional) on PostgreSQL until `numbered` gives it the id drawn at commit.
    event_id: int
    # The new event, to publish once the transaction commits; None when the turn already held it.
    event: service_pb2.ManifestEvent | None


def numbered(recorded: Recorded, committed: str | None) -> Recorded:
    """The recorded event with the id its commit drew (a provisional id is only ever PostgreSQL's).

    `committed` is the session setting the commit left and announced: "provisional final".
    """
    if recorded.event is None or recorded.event_id > 0:
        return recorded
    provisional, _, final = (committed or "").partition(" ")
    if provisional != str(recorded.event_id) or not final.isdigit():
        # The connection holds another transaction's value, or none: the trigger did not run.
        raise RuntimeError(
            f"event {recorded.event_id} was committed without an id drawn (migrations 0005, 0012)"
        )
    event = service_pb2.ManifestEvent()
    event.CopyFrom(recorded.event)
    event.event_id = int(final)
    return Recorded(event.event_id, event)


def id_setting(recorded: Recorded) -> str:
    """The session setting to read after the commit: EVENT_ID_SETTING when the commit drew an id
    (an event inserted with a provisional id), else none (no round trip for it)."""
    return EVENT_ID_SETTING if recorded.event is not None and recorded.event_id < 0 else ""


def prepare_manifest(thread_id: str, turn_id: str, manifest: prompt_pb2.PromptManifest) -> PreparedManifest:
    _check_ids(thread_id, turn_id)
    stored = prompt_pb2.PromptManifest()
    stored.CopyFrom(manifest)
    stored.thread_id, stored.turn_id = thread_id, turn_id
    return PreparedManifest(
        thread_id, turn_id, stored, stored.SerializeToString(deterministic=True), manifest_json(stored)
    )


# Built once: building a statement costs more Python than running it, on every round.
_INSERT_EVENT = (
    EVENTS.insert()
    .values(
        thread_id=bindparam("b_thread_id"),
        turn_id=bindparam("b_turn_id"),
        manifest_pb=bindparam("b_manifest_pb"),
        created_at=bindparam("b_created_at"),
    )
    .returning(EVENTS.c.id)
)
_INSERT_EVENT_SQLITE = Direct(_INSERT_EVENT, dialects=(SQLITE,))
_UPDATE_TURN = Direct(
    TURNS.update()
    .where(TURNS.c.thread_id == bindparam("b_thread_id"), TURNS.c.turn_id == bindparam("b_turn_id"))
    .values(
        prompt_manifest_json=bindparam("b_json"),
        prompt_compiler_version=bindparam("b_version"),
        prompt_profile=bindparam("b_profile"),
        prompt_fingerprint_stable=bindparam("b_stable"),
        prompt_fingerprint_dynamic=bindparam("b_dynamic"),
        prompt_fingerprint_full=bindparam("b_full"),
        manifest_event_id=bindparam("b_event_id"),
        updated_at=bindparam("b_updated_at"),
    ),
    dialects=(SQLITE,),
)


# PostgreSQL: the event with a provisional id (the commit draws the real one, see the module
# docstring) and the turn's columns pointing at it, in one round trip: what `_INSERT_EVENT` with
# that id and then `_UPDATE_TURN` do (tests/store/test_postgres_statements.py).
_RECORD_PG = Direct(
    text(
        """
    WITH event AS (
        INSERT INTO manifest_events (id, thread_id, turn_id, manifest_pb, created_at)
        VALUES (
            -nextval('manifest_events_provisional_id_seq'),
            :b_thread_id, :b_turn_id, :b_manifest_pb, :b_updated_at
        )
        RETURNING id
    ), turn AS (
        UPDATE turns SET
            prompt_manifest_json = :b_json,
            prompt_compiler_version = :b_version,
            prompt_profile = :b_profile,
            prompt_fingerprint_stable = :b_stable,
            prompt_fingerprint_dynamic = :b_dynamic,
            prompt_fingerprint_full = :b_full,
            manifest_event_id = (SELECT id FROM event),
            updated_at = :b_updated_at
        WHERE thread_id = :b_thread_id AND turn_id = :b_turn_id
    )
    SELECT id FROM event
    """
    ),
    dialects=(POSTGRESQL,),
)


def record_in(conn: Connection, prepared: PreparedManifest, turn: TurnRecord, *, postgres: bool) -> Recorded:
    """Within the caller's transaction, after `lock_turn`: the event and the turn's manifest columns.

    The caller commits with `TransactionRunner.transact(..., id_setting)`,
    gives `numbered` what it read, and hands that to `ManifestRecorder.published`.
    """
    if turn.event_id is not None and turn.manifest_json == prepared.as_json:
        return Recorded(turn.event_id, None)
    created = now()
    record = recorded_in_one if postgres else recorded_separately
    event_id = record(conn, turn_columns(prepared, created))
    return Recorded(event_id, new_event(event_id, prepared, created))


def turn_columns(prepared: PreparedManifest, created: datetime) -> dict[str, Any]:
    stored = prepared.manifest
    return {
        "b_thread_id": prepared.thread_id,
        "b_turn_id": prepared.turn_id,
        "b_manifest_pb": prepared.encoded,
        "b_json": prepared.as_json,
        "b_version": stored.compiler_version,
        "b_profile": profile_name(stored.profile),
        "b_stable": stored.fingerprint_stable,
        "b_dynamic": stored.fingerprint_dynamic,
        "b_full": stored.fingerprint_full,
        "b_updated_at": created,
    }


def recorded_separately(conn: Connection, columns: dict[str, Any]) -> int:
    """SQLite's record: the event (its id drawn here), then the turn's columns; the event id."""
    event = {name: columns[name] for name in ("b_thread_id", "b_turn_id", "b_manifest_pb")}
    event_id: int = _INSERT_EVENT_SQLITE.first(conn, {**event, "b_created_at": columns["b_updated_at"]}).id
    _UPDATE_TURN.rows(conn, {**columns, "b_event_id": event_id})
    return event_id


def recorded_in_one(conn: Connection, columns: dict[str, Any]) -> int:
    """PostgreSQL's record: one statement; the event id is provisional until the commit draws it."""
    event_id: int = _RECORD_PG.first(conn, columns).id
    return event_id


def new_event(event_id: int, prepared: PreparedManifest, created: datetime) -> service_pb2.ManifestEvent:
    event = service_pb2.ManifestEvent(
        event_id=event_id, thread_id=prepared.thread_id, turn_id=prepared.turn_id, manifest=prepared.manifest
    )
    event.create_time.FromDatetime(created)
    return event


class ManifestRecorder:
    """`await record(thread_id, turn_id, manifest) -> event_id`; then `on_committed(event)`."""

    def __init__(
        self,
        runner: TransactionRunner,
        postgres: bool,
        on_committed: Callable[[service_pb2.ManifestEvent], None] = lambda _event: None,
    ) -> None:
        self._runner = runner
        self.postgres = postgres
        self._on_committed = on_committed

    async def record(self, thread_id: str, turn_id: str, manifest: prompt_pb2.PromptManifest) -> int:
        """Creates the thread (default budget) and the turn (in progress) when missing.

        A caller cancelled meanwhile still has its committed event published before it
        sees the cancellation: live observers get it at once, not at the hub's next poll.
        """
        prepared = prepare_manifest(thread_id, turn_id, manifest)

        def work(conn: Connection, _: None) -> Recorded:
            ensure_thread_in(conn, thread_id)
            return record_in(conn, prepared, lock_turn(conn, thread_id, turn_id), postgres=self.postgres)

        async def committed() -> int:
            recorded, committed_id = await self._runner.transact(nothing, work, id_setting)
            recorded = numbered(recorded, committed_id)
            self.published(recorded)
            return recorded.event_id

        return await run_to_end(committed())

    def published(self, recorded: Recorded) -> None:
        """Hands a committed new event to the live observers (nothing for a repeat)."""
        if recorded.event is not None:
            self._on_committed(recorded.event)
