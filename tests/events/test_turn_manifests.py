"""A compile's manifest on its turn: the columns, the event row, GetTurnManifest and DiffManifests."""

from __future__ import annotations

from datetime import UTC, datetime

import grpc
import pytest
from google.protobuf import json_format
from sqlalchemy import select

from pioneer_grpc.client import event_ref, inline_ref, turn_ref
from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.service.observe import record_manifest
from pioneer_grpc.store.models import ManifestEventRow, ThreadRow, TurnRow
from pioneer_grpc.tenants import DEFAULT_TENANT
from pioneer_grpc.v1 import history_pb2, prompt_pb2
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from tests.events.helpers import DYNAMIC, STABLE, manifest, numbered_manifest
from tests.support import failure


async def test_record_persists_the_manifest_on_a_new_turn_and_appends_an_event(pg_server) -> None:
    compiled = manifest(
        [("identity", STABLE, "you are pioneer"), ("dynamic_context", DYNAMIC, "now")],
        diagnostics=[("missing_file", "USER.md is missing")],
        version="0.3.1",
    )
    compiled.profile = prompt_pb2.PROMPT_PROFILE_MINIMAL
    event_id = await record_manifest(pg_server.ctx, "thread-a", "turn-1", compiled)
    assert event_id >= 1

    async with pg_server.ctx.store.sessions() as session:
        thread = await session.get(ThreadRow, ("thread-a", DEFAULT_TENANT))
        turn = await session.get(TurnRow, ("thread-a", "turn-1", DEFAULT_TENANT))
        event = await session.get(ManifestEventRow, event_id)
    assert (thread.max_context_tokens, thread.response_reserve_tokens) == (128_000, 16_000)
    assert turn.status == history_pb2.TURN_STATUS_IN_PROGRESS
    assert turn.prompt_compiler_version == "0.3.1"
    assert turn.prompt_profile == "minimal"
    assert turn.prompt_fingerprint_stable == compiled.fingerprint_stable
    assert turn.prompt_fingerprint_dynamic == compiled.fingerprint_dynamic
    assert turn.prompt_fingerprint_full == compiled.fingerprint_full
    assert turn.manifest_event_id == event_id

    expected = prompt_pb2.PromptManifest()
    expected.CopyFrom(compiled)
    expected.thread_id, expected.turn_id = "thread-a", "turn-1"
    assert json_format.Parse(turn.prompt_manifest_json, prompt_pb2.PromptManifest()) == expected
    assert (event.thread_id, event.turn_id) == ("thread-a", "turn-1")
    assert prompt_pb2.PromptManifest.FromString(event.manifest_pb) == expected
    created = event.created_at if event.created_at.tzinfo else event.created_at.replace(tzinfo=UTC)
    assert abs((datetime.now(UTC) - created).total_seconds()) < 60


async def test_each_round_appends_an_event_and_the_turn_keeps_the_latest(pg_server) -> None:
    ids = [await record_manifest(pg_server.ctx, "t", "turn-1", numbered_manifest(n)) for n in range(3)]
    assert ids == sorted(ids)
    assert len(set(ids)) == 3
    response = await (await pg_server.client()).get_turn_manifest(thread_id="t", turn_id="turn-1")
    assert response.event_id == ids[-1]
    assert response.status == history_pb2.TURN_STATUS_IN_PROGRESS
    assert response.manifest.fingerprint_dynamic == numbered_manifest(2).fingerprint_dynamic
    assert (response.manifest.thread_id, response.manifest.turn_id) == ("t", "turn-1")
    async with pg_server.ctx.store.sessions() as session:
        rows = (await session.scalars(select(ManifestEventRow.id).order_by(ManifestEventRow.id))).all()
    assert list(rows) == ids


async def test_an_existing_turn_keeps_its_status(pg_server) -> None:
    now = datetime.now(UTC)
    async with pg_server.ctx.store.sessions() as session, session.begin():
        session.add(
            ThreadRow(
                thread_id="t",
                max_context_tokens=9000,
                response_reserve_tokens=1000,
                model="m",
                summary_model="",
                created_at=now,
                updated_at=now,
            )
        )
        session.add(
            TurnRow(
                thread_id="t",
                turn_id="done",
                status=history_pb2.TURN_STATUS_COMPLETED,
                created_at=now,
                updated_at=now,
            )
        )
    await record_manifest(pg_server.ctx, "t", "done", numbered_manifest(1))
    async with pg_server.ctx.store.sessions() as session:
        thread = await session.get(ThreadRow, ("t", DEFAULT_TENANT))
        turn = await session.get(TurnRow, ("t", "done", DEFAULT_TENANT))
    assert (thread.max_context_tokens, thread.model) == (9000, "m")
    assert turn.status == history_pb2.TURN_STATUS_COMPLETED


async def test_get_turn_manifest_not_found_cases(pg_server) -> None:
    now = datetime.now(UTC)
    await record_manifest(pg_server.ctx, "t", "compiled", numbered_manifest(1))
    async with pg_server.ctx.store.sessions() as session, session.begin():
        session.add(
            TurnRow(
                thread_id="t",
                turn_id="bare",
                status=history_pb2.TURN_STATUS_IN_PROGRESS,
                created_at=now,
                updated_at=now,
            )
        )
    manifests = await pg_server.client()
    cases = [
        ("nope", "compiled", "thread 'nope' not found"),
        ("t", "nope", "turn 'nope' not found in thread 't'"),
        ("t", "bare", "turn 'bare' of thread 't' has no manifest yet"),
    ]
    for thread_id, turn_id, message in cases:
        failed = await failure(manifests.get_turn_manifest(thread_id=thread_id, turn_id=turn_id))
        assert failed.code == grpc.StatusCode.NOT_FOUND
        assert failed.message.startswith(message)
    failed = await failure(manifests.get_turn_manifest(thread_id="t"))
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
    assert failed.message == "turn_id: must not be empty"


async def test_record_rejects_bad_ids(server) -> None:
    for thread_id, turn_id, field in [("", "u", "thread_id"), ("t", "x" * 201, "turn_id")]:
        with pytest.raises(InvalidArgument) as caught:
            await record_manifest(server.ctx, thread_id, turn_id, numbered_manifest(1))
        assert [v.field for v in caught.value.violations] == [field]


async def test_diff_by_turn_event_and_inline_manifest(pg_server) -> None:
    base = manifest([("identity", STABLE, "v1"), ("dynamic_context", DYNAMIC, "a")])
    target = manifest(
        [("identity", STABLE, "v2"), ("dynamic_context", DYNAMIC, "a")],
        diagnostics=[("file_truncated", "SOUL.md cut")],
    )
    base_id = await record_manifest(pg_server.ctx, "t", "turn-1", base)
    await record_manifest(pg_server.ctx, "t", "turn-2", target)
    manifests = await pg_server.client()
    refs = [(event_ref(base_id), turn_ref("t", "turn-2")), (inline_ref(base), inline_ref(target))]
    for base_ref, target_ref in refs:
        result = await manifests.diff_manifests(base=base_ref, target=target_ref)
        assert [(c.section_id, c.kind) for c in result.changes] == [
            ("identity", service_pb2.SECTION_CHANGE_KIND_CHANGED)
        ]
        assert (result.stable_changed, result.dynamic_changed, result.full_changed) == (True, False, True)
        assert result.cache_break_section_id == "identity"
        assert [d.code for d in result.new_diagnostics] == ["file_truncated"]


async def test_diff_reports_missing_and_unset_refs(server) -> None:
    manifests = await server.client()
    inline = inline_ref(numbered_manifest(1))
    bad = [
        (service_pb2.ManifestRef(event_id=99), grpc.StatusCode.NOT_FOUND, "manifest event 99 not found"),
        (
            service_pb2.ManifestRef(),
            grpc.StatusCode.INVALID_ARGUMENT,
            "base: must name a turn, an event id or an inline manifest",
        ),
        (
            service_pb2.ManifestRef(turn=service_pb2.TurnRef(thread_id="t")),
            grpc.StatusCode.INVALID_ARGUMENT,
            "base.turn.turn_id: must not be empty",
        ),
    ]
    for ref, code, message in bad:
        failed = await failure(manifests.diff_manifests(base=ref, target=inline))
        assert (failed.code, failed.message) == (code, message)
