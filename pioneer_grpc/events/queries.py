"""Reads of manifest events and of the manifest stored on a turn (Core, no ORM: these are hot)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from pioneer_grpc import reasons
from pioneer_grpc.errors import NotFound
from pioneer_grpc.store.clock import as_utc
from pioneer_grpc.store.models import Base, ManifestEventRow, ThreadRow, TurnRow
from pioneer_grpc.store.work import database_work
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from pioneer_grpc.v1 import prompt_pb2

EVENTS = Base.metadata.tables[ManifestEventRow.__tablename__]
TURNS = Base.metadata.tables[TurnRow.__tablename__]
THREADS = Base.metadata.tables[ThreadRow.__tablename__]


def event_message(row: Any) -> service_pb2.ManifestEvent:
    event = service_pb2.ManifestEvent(
        event_id=row.id,
        thread_id=row.thread_id,
        turn_id=row.turn_id,
        manifest=prompt_pb2.PromptManifest.FromString(row.manifest_pb),
    )
    event.create_time.FromDatetime(as_utc(row.created_at))
    return event


@database_work
async def newest_event_id(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        newest = await conn.scalar(select(func.max(EVENTS.c.id)))
    return int(newest or 0)


@database_work
async def events_after(
    engine: AsyncEngine, after_id: int, *, thread_id: str = "", limit: int = 500
) -> list[service_pb2.ManifestEvent]:
    """Stored events with id > after_id in id order, optionally of one thread."""
    query = select(EVENTS).where(EVENTS.c.id > after_id)
    if thread_id:
        query = query.where(EVENTS.c.thread_id == thread_id)
    async with engine.connect() as conn:
        rows = (await conn.execute(query.order_by(EVENTS.c.id).limit(limit))).all()
    return [event_message(row) for row in rows]


@database_work
async def event_by_id(engine: AsyncEngine, event_id: int) -> service_pb2.ManifestEvent:
    async with engine.connect() as conn:
        row = (await conn.execute(select(EVENTS).where(EVENTS.c.id == event_id))).first()
    if row is None:
        raise NotFound(
            f"manifest event {event_id} not found",
            reason=reasons.MANIFEST_EVENT_NOT_FOUND,
            metadata={"event_id": str(event_id)},
        )
    return event_message(row)


@dataclass(frozen=True)
class TurnManifest:
    manifest: prompt_pb2.PromptManifest
    status: int
    event_id: int


@database_work
async def turn_manifest(engine: AsyncEngine, thread_id: str, turn_id: str) -> TurnManifest:
    """The manifest of a turn's latest compile; NotFound names what is missing."""
    async with engine.connect() as conn:
        turn = (
            await conn.execute(
                select(TURNS.c.status, TURNS.c.prompt_manifest_json, TURNS.c.manifest_event_id).where(
                    TURNS.c.thread_id == thread_id, TURNS.c.turn_id == turn_id
                )
            )
        ).first()
        if turn is None:
            if await conn.scalar(select(THREADS.c.thread_id).where(THREADS.c.thread_id == thread_id)) is None:
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
