"""A compile's manifest on its turn and as a durable event: the statements, and the reads of both.

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
server's COMMIT, never across the client's pauses between statements. The trigger
leaves the id in the session setting `EVENT_ID_SETTING` and announces it to the
committing session in a NOTICE that comes with the COMMIT's answer (migration 0012;
`TransactionRunner.transact` hands it over; `numbered` finishes the `Recorded`).

Retries do not duplicate: when the turn already holds exactly this manifest (a
PrepareTurn or CompilePrompt repeated for the same turn with the same compile),
the turn's existing event id is the answer and nothing is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from google.protobuf import json_format
from sqlalchemy import String, bindparam, cast, func, select, text
from sqlalchemy.engine import Connection

from pioneer_grpc import reasons
from pioneer_grpc.errors import InvalidArgument, NotFound
from pioneer_grpc.history.entries import id_violation
from pioneer_grpc.store.clock import as_utc, now
from pioneer_grpc.store.driver import POSTGRESQL, SQLITE, Direct
from pioneer_grpc.store.manifest_json import manifest_json
from pioneer_grpc.store.models import Base, ManifestEventRow, ThreadRow, TurnRow
from pioneer_grpc.store.port import PreparedManifest, Recorded, TurnManifest, TurnRecord
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from pioneer_grpc.v1 import prompt_pb2

EVENTS = Base.metadata.tables[ManifestEventRow.__tablename__]
TURNS = Base.metadata.tables[TurnRow.__tablename__]
THREADS = Base.metadata.tables[ThreadRow.__tablename__]

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


def prepare_manifest(thread_id: str, turn_id: str, manifest: prompt_pb2.PromptManifest) -> PreparedManifest:
    """The manifest as it will be stored (its thread and turn ids set), encoded and printed. Blocking."""
    InvalidArgument.raise_if([id_violation("thread_id", thread_id), id_violation("turn_id", turn_id)])
    stored = prompt_pb2.PromptManifest()
    stored.CopyFrom(manifest)
    stored.thread_id, stored.turn_id = thread_id, turn_id
    return PreparedManifest(
        thread_id, turn_id, stored, stored.SerializeToString(deterministic=True), manifest_json(stored)
    )


def new_event(
    event_id: int, tenant: str, prepared: PreparedManifest, created: datetime
) -> service_pb2.ManifestEvent:
    event = service_pb2.ManifestEvent(
        event_id=event_id,
        tenant=tenant,
        thread_id=prepared.thread_id,
        turn_id=prepared.turn_id,
        manifest=prepared.manifest,
    )
    event.create_time.FromDatetime(created)
    return event


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


def turn_columns(tenant: str, prepared: PreparedManifest, created: datetime) -> dict[str, Any]:
    stored = prepared.manifest
    return {
        "b_thread_id": prepared.thread_id,
        "b_tenant": tenant,
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


# Built once: building a statement costs more Python than running it, on every round.
_INSERT_EVENT_SQLITE = Direct(
    EVENTS.insert()
    .values(
        thread_id=bindparam("b_thread_id"),
        tenant=bindparam("b_tenant"),
        turn_id=bindparam("b_turn_id"),
        manifest_pb=bindparam("b_manifest_pb"),
        created_at=bindparam("b_created_at"),
    )
    .returning(EVENTS.c.id),
    dialects=(SQLITE,),
)
_UPDATE_TURN_SQLITE = Direct(
    TURNS.update()
    .where(
        TURNS.c.thread_id == bindparam("b_thread_id"),
        TURNS.c.tenant == bindparam("b_tenant"),
        TURNS.c.turn_id == bindparam("b_turn_id"),
    )
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
# docstring) and the turn's columns pointing at it, in one round trip: what the event's INSERT with
# that id and then the turn's UPDATE do.
_RECORD_PG = Direct(
    text(
        """
    WITH event AS (
        INSERT INTO manifest_events (id, thread_id, tenant, turn_id, manifest_pb, created_at)
        VALUES (
            -nextval('manifest_events_provisional_id_seq'),
            :b_thread_id, :b_tenant, :b_turn_id, :b_manifest_pb, :b_updated_at
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
        WHERE thread_id = :b_thread_id AND tenant = :b_tenant AND turn_id = :b_turn_id
    )
    SELECT id FROM event
    """
    ),
    dialects=(POSTGRESQL,),
)


def record_in(conn: Connection, tenant: str, prepared: PreparedManifest, turn: TurnRecord) -> Recorded:
    """Within the caller's transaction, the turn's row locked: the event and the turn's manifest
    columns, unless the turn holds this manifest already. On PostgreSQL the id is provisional until
    the commit draws it (`numbered`)."""
    if turn.event_id is not None and turn.manifest_json == prepared.as_json:
        return Recorded(turn.event_id, None)
    created = now()
    columns = turn_columns(tenant, prepared, created)
    if conn.dialect.name == "postgresql":
        event_id: int = _RECORD_PG.first(conn, columns).id
    else:
        event = {name: columns[name] for name in ("b_thread_id", "b_tenant", "b_turn_id", "b_manifest_pb")}
        event_id = _INSERT_EVENT_SQLITE.first(conn, {**event, "b_created_at": created}).id
        _UPDATE_TURN_SQLITE.rows(conn, {**columns, "b_event_id": event_id})
    return Recorded(event_id, new_event(event_id, tenant, prepared, created))


def event_message(row: Any) -> service_pb2.ManifestEvent:
    event = service_pb2.ManifestEvent(
        event_id=row.id,
        tenant=row.tenant,
        thread_id=row.thread_id,
        turn_id=row.turn_id,
        manifest=prompt_pb2.PromptManifest.FromString(row.manifest_pb),
    )
    event.create_time.FromDatetime(as_utc(row.created_at))
    return event


_NEWEST_EVENT = select(func.max(EVENTS.c.id))


def newest_event_id_in(conn: Connection) -> int:
    """The newest event's id, of every tenant: a position in the one sequence of events, no content."""
    return int(conn.execute(_NEWEST_EVENT).scalar() or 0)


# Threads a statement of `threads_created_in` names at most.
_IDS_PER_STATEMENT = 500


def threads_created_in(conn: Connection, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Each of the threads `keys` (tenant, thread id) that exists, with its creation time as the
    history state reads it."""
    wanted = set(keys)
    found: dict[tuple[str, str], str] = {}
    ids = sorted({thread_id for _, thread_id in wanted})
    for start in range(0, len(ids), _IDS_PER_STATEMENT):
        statement = select(ThreadRow.tenant, ThreadRow.thread_id, cast(ThreadRow.created_at, String)).where(
            ThreadRow.thread_id.in_(ids[start : start + _IDS_PER_STATEMENT])
        )
        for tenant, thread_id, created in conn.execute(statement):
            if (tenant, thread_id) in wanted:
                found[(tenant, thread_id)] = created
    return found


def events_after_in(
    conn: Connection, tenant: str | None, after_id: int, thread_id: str, limit: int
) -> list[service_pb2.ManifestEvent]:
    """Stored events of `tenant` (None: of every tenant) with id > after_id in id order, optionally
    of one thread."""
    query = select(EVENTS).where(EVENTS.c.id > after_id)
    if tenant is not None:
        query = query.where(EVENTS.c.tenant == tenant)
    if thread_id:
        query = query.where(EVENTS.c.thread_id == thread_id)
    return [event_message(row) for row in conn.execute(query.order_by(EVENTS.c.id).limit(limit)).all()]


def event_by_id_in(conn: Connection, tenant: str | None, event_id: int) -> service_pb2.ManifestEvent:
    """The event (of `tenant`; None: of any); another tenant's answers as a missing one does."""
    query = select(EVENTS).where(EVENTS.c.id == event_id)
    if tenant is not None:
        query = query.where(EVENTS.c.tenant == tenant)
    row = conn.execute(query).first()
    if row is None:
        raise NotFound(
            f"manifest event {event_id} not found",
            reason=reasons.MANIFEST_EVENT_NOT_FOUND,
            metadata={"event_id": str(event_id)},
        )
    return event_message(row)


def turn_manifest_in(conn: Connection, tenant: str, thread_id: str, turn_id: str) -> TurnManifest:
    """The manifest of a turn's latest compile; NotFound names what is missing."""
    turn = conn.execute(
        select(TURNS.c.status, TURNS.c.prompt_manifest_json, TURNS.c.manifest_event_id).where(
            TURNS.c.thread_id == thread_id, TURNS.c.tenant == tenant, TURNS.c.turn_id == turn_id
        )
    ).first()
    if turn is None:
        of_thread = (THREADS.c.thread_id == thread_id) & (THREADS.c.tenant == tenant)
        if conn.execute(select(THREADS.c.thread_id).where(of_thread)).first() is None:
            raise NotFound(
                f"thread {thread_id!r} not found",
                reason=reasons.THREAD_NOT_FOUND,
                metadata={"thread_id": thread_id},
            )
        raise NotFound(
            f"turn {turn_id!r} not found in thread {thread_id!r}",
            reason=reasons.TURN_NOT_FOUND,
            metadata={"thread_id": thread_id, "turn_id": turn_id},
        )
    if turn.prompt_manifest_json is None:
        raise NotFound(
            f"turn {turn_id!r} of thread {thread_id!r} has no manifest yet: no compile named it",
            reason=reasons.TURN_MANIFEST_NOT_FOUND,
            metadata={"thread_id": thread_id, "turn_id": turn_id},
        )
    manifest = json_format.Parse(
        turn.prompt_manifest_json, prompt_pb2.PromptManifest(), ignore_unknown_fields=True
    )
    return TurnManifest(manifest=manifest, status=turn.status, event_id=turn.manifest_event_id or 0)
