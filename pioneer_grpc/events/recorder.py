"""Persist a compile's manifest on its turn and append it to the durable event table.

Both writes happen in one transaction, so a turn never points at an event that
does not exist and an event never describes a turn that was not updated.

No gaps for observers on PostgreSQL: ids come from a sequence, and sequence
values can commit out of order (txn A takes 5, txn B takes 6 and commits first;
an observer that read 6 and resumes "after 6" would never see 5). Every insert
therefore first takes one transaction-scoped advisory lock, held until commit, so
the next id is only drawn after the previous event is committed (or rolled back)
and visible: commit order equals id order. PostgreSQL makes a commit visible
before it releases the transaction's locks, so a reader that sees id N also sees
every committed id below N. The turn row is locked before the advisory lock, so
the global lock covers only the event insert, the turn update and the commit, and
all recorders take their locks in the same order (no deadlock). SQLite has a
single writer, which gives the same guarantee without a lock.

Retries do not duplicate: when the turn already holds exactly this manifest (a
PrepareTurn or CompilePrompt repeated for the same turn with the same compile),
the turn's existing event id is the answer and nothing is written or published.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.events.manifest_json import manifest_json
from pioneer_grpc.events.queries import EVENTS, TURNS
from pioneer_grpc.history.entries import id_violation
from pioneer_grpc.store.clock import now
from pioneer_grpc.store.runner import TransactionRunner
from pioneer_grpc.store.turns import TurnRecord, ensure_thread_in, lock_turn
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from pioneer_grpc.v1 import prompt_pb2

# pg_notify channel; the payload is the event id and nothing else.
NOTIFY_CHANNEL = "pioneer_manifest_events"
# (namespace, key) for pg_advisory_xact_lock(int4, int4); the two-key form keeps
# it apart from single-bigint advisory locks taken elsewhere.
EVENT_INSERT_LOCK = (0x50494F4E, 0x4D455654)


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
    """A manifest as it will be stored, encoded before any transaction (PostgreSQL holds a global lock)."""

    thread_id: str
    turn_id: str
    manifest: prompt_pb2.PromptManifest
    encoded: bytes
    as_json: str


@dataclass(frozen=True)
class Recorded:
    event_id: int
    # The new event, to publish once the transaction commits; None when the turn already held it.
    event: service_pb2.ManifestEvent | None


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
_UPDATE_TURN = (
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
    )
)


def record_in(conn: Connection, prepared: PreparedManifest, turn: TurnRecord, *, postgres: bool) -> Recorded:
    """Within the caller's transaction, after `lock_turn`: the event and the turn's manifest columns.

    The caller hands `Recorded` to `ManifestRecorder.published` after commit.
    """
    if turn.event_id is not None and turn.manifest_json == prepared.as_json:
        return Recorded(turn.event_id, None)
    if postgres:
        conn.execute(
            text("SELECT pg_advisory_xact_lock(:namespace, :key)"),
            {"namespace": EVENT_INSERT_LOCK[0], "key": EVENT_INSERT_LOCK[1]},
        )
    created = now()
    stored = prepared.manifest
    event_id: int = conn.execute(
        _INSERT_EVENT,
        {
            "b_thread_id": prepared.thread_id,
            "b_turn_id": prepared.turn_id,
            "b_manifest_pb": prepared.encoded,
            "b_created_at": created,
        },
    ).scalar_one()
    conn.execute(
        _UPDATE_TURN,
        {
            "b_thread_id": prepared.thread_id,
            "b_turn_id": prepared.turn_id,
            "b_json": prepared.as_json,
            "b_version": stored.compiler_version,
            "b_profile": profile_name(stored.profile),
            "b_stable": stored.fingerprint_stable,
            "b_dynamic": stored.fingerprint_dynamic,
            "b_full": stored.fingerprint_full,
            "b_event_id": event_id,
            "b_updated_at": created,
        },
    )
    if postgres:
        # Delivered to every listening replica when (and only if) this commits.
        conn.execute(
            text("SELECT pg_notify(:channel, :payload)"),
            {"channel": NOTIFY_CHANNEL, "payload": str(event_id)},
        )
    return Recorded(event_id, _event(event_id, prepared, created))


def _event(event_id: int, prepared: PreparedManifest, created: datetime) -> service_pb2.ManifestEvent:
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
        """Creates the thread (default budget) and the turn (in progress) when missing."""
        prepared = prepare_manifest(thread_id, turn_id, manifest)

        def work(conn: Connection, _: None) -> Recorded:
            ensure_thread_in(conn, thread_id)
            # The turn row is locked by this statement, before the event lock.
            return record_in(conn, prepared, lock_turn(conn, thread_id, turn_id), postgres=self.postgres)

        recorded = await self._runner.transact(lambda: None, work)
        self.published(recorded)
        return recorded.event_id

    def published(self, recorded: Recorded) -> None:
        """Hands a committed new event to the live observers (nothing for a repeat)."""
        if recorded.event is not None:
            self._on_committed(recorded.event)
