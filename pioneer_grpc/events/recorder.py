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
"""

from __future__ import annotations

from collections.abc import Callable

from google.protobuf import json_format
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.events.queries import EVENTS, TURNS
from pioneer_grpc.history.entries import id_violation
from pioneer_grpc.store.clock import now
from pioneer_grpc.store.turns import ensure_thread, ensure_turns
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


def manifest_json(manifest: prompt_pb2.PromptManifest) -> str:
    return json_format.MessageToJson(manifest, preserving_proto_field_name=True, indent=None, sort_keys=True)


def _check_ids(thread_id: str, turn_id: str) -> None:
    InvalidArgument.raise_if([id_violation("thread_id", thread_id), id_violation("turn_id", turn_id)])


class ManifestRecorder:
    """`await record(thread_id, turn_id, manifest) -> event_id`; then `on_committed(event)`."""

    def __init__(
        self,
        engine: AsyncEngine,
        on_committed: Callable[[service_pb2.ManifestEvent], None] = lambda _event: None,
    ) -> None:
        self._engine = engine
        self._postgres = engine.dialect.name == "postgresql"
        self._on_committed = on_committed

    async def record(self, thread_id: str, turn_id: str, manifest: prompt_pb2.PromptManifest) -> int:
        """Creates the thread (default budget) and the turn (in progress) when missing."""
        _check_ids(thread_id, turn_id)
        stored = prompt_pb2.PromptManifest()
        stored.CopyFrom(manifest)
        stored.thread_id, stored.turn_id = thread_id, turn_id
        # Encoded before the transaction: on PostgreSQL it holds a global lock.
        encoded, as_json = stored.SerializeToString(deterministic=True), manifest_json(stored)
        async with self._engine.begin() as conn:
            # The turn row is locked by this statement, before the event lock below.
            await ensure_thread(conn, thread_id)
            await ensure_turns(conn, thread_id, [turn_id], lock=True)
            if self._postgres:
                await conn.execute(
                    text("SELECT pg_advisory_xact_lock(:namespace, :key)"),
                    {"namespace": EVENT_INSERT_LOCK[0], "key": EVENT_INSERT_LOCK[1]},
                )
            created = now()
            event_id: int = (
                await conn.execute(
                    EVENTS.insert()
                    .values(
                        thread_id=thread_id,
                        turn_id=turn_id,
                        manifest_pb=encoded,
                        created_at=created,
                    )
                    .returning(EVENTS.c.id)
                )
            ).scalar_one()
            await conn.execute(
                TURNS.update()
                .where(TURNS.c.thread_id == thread_id, TURNS.c.turn_id == turn_id)
                .values(
                    prompt_manifest_json=as_json,
                    prompt_compiler_version=stored.compiler_version,
                    prompt_profile=profile_name(stored.profile),
                    prompt_fingerprint_stable=stored.fingerprint_stable,
                    prompt_fingerprint_dynamic=stored.fingerprint_dynamic,
                    prompt_fingerprint_full=stored.fingerprint_full,
                    manifest_event_id=event_id,
                    updated_at=created,
                )
            )
            if self._postgres:
                # Delivered to every listening replica when (and only if) this commits.
                await conn.execute(
                    text("SELECT pg_notify(:channel, :payload)"),
                    {"channel": NOTIFY_CHANNEL, "payload": str(event_id)},
                )
        event = service_pb2.ManifestEvent(
            event_id=event_id, thread_id=thread_id, turn_id=turn_id, manifest=stored
        )
        event.create_time.FromDatetime(created)
        self._on_committed(event)
        return event_id
