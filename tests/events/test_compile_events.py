"""End to end through CompilePrompt: the turn's manifest, the event an observer sees, the diff."""

from __future__ import annotations

import asyncio

from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from pioneer_grpc.v1 import manifest_service_pb2_grpc as service_grpc
from pioneer_grpc.v1 import prompt_compiler_service_pb2 as compiler_pb2
from pioneer_grpc.v1 import prompt_compiler_service_pb2_grpc as compiler_grpc
from pioneer_grpc.v1 import prompt_pb2
from tests.events.helpers import Observer, compile_turn


def turn_ref(thread_id: str, turn_id: str) -> service_pb2.ManifestRef:
    return service_pb2.ManifestRef(turn=service_pb2.TurnRef(thread_id=thread_id, turn_id=turn_id))


async def test_a_compile_naming_a_turn_is_stored_streamed_and_diffable(pg_server) -> None:
    observer = Observer(pg_server.channel(), service_pb2.WatchManifestsRequest(thread_id="agent")).start()
    await observer.wait_live()
    manifests = service_grpc.ManifestServiceStub(pg_server.channel())

    first = await compile_turn(pg_server.channel(), "agent", "turn-1", "round 1")
    second = await compile_turn(pg_server.channel(), "agent", "turn-2", "round 2")
    assert 0 < first.manifest_event_id < second.manifest_event_id
    assert await observer.wait_for_count(2) == [first.manifest_event_id, second.manifest_event_id]

    stored = await manifests.GetTurnManifest(
        service_pb2.GetTurnManifestRequest(thread_id="agent", turn_id="turn-1")
    )
    assert stored.event_id == first.manifest_event_id
    assert stored.manifest == first.payload.manifest
    assert (stored.manifest.thread_id, stored.manifest.turn_id) == ("agent", "turn-1")

    diff = await manifests.DiffManifests(
        service_pb2.DiffManifestsRequest(base=turn_ref("agent", "turn-1"), target=turn_ref("agent", "turn-2"))
    )
    assert [(c.section_id, c.kind) for c in diff.changes] == [
        ("dynamic_context", service_pb2.SECTION_CHANGE_KIND_CHANGED)
    ]
    assert (diff.stable_changed, diff.dynamic_changed, diff.cache_break_section_id) == (False, True, "")
    await observer.cancel()


async def test_an_edited_bootstrap_file_is_named_as_the_cache_break(seeded_server) -> None:
    server = seeded_server
    before = await compile_turn(server.channel(), "agent", "turn-1", "same")
    soul = server.home / "SOUL.md"
    await asyncio.to_thread(soul.write_text, "A different soul.\n")
    after = await compile_turn(server.channel(), "agent", "turn-2", "same")
    manifests = service_grpc.ManifestServiceStub(server.channel())
    diff = await manifests.DiffManifests(
        service_pb2.DiffManifestsRequest(
            base=service_pb2.ManifestRef(event_id=before.manifest_event_id),
            target=service_pb2.ManifestRef(event_id=after.manifest_event_id),
        )
    )
    assert [(c.section_id, c.kind, c.stability) for c in diff.changes] == [
        ("soul_core", service_pb2.SECTION_CHANGE_KIND_CHANGED, prompt_pb2.SECTION_STABILITY_STABLE)
    ]
    assert (diff.stable_changed, diff.dynamic_changed, diff.full_changed) == (True, False, True)
    assert diff.cache_break_section_id == "soul_core"


async def test_a_compile_without_a_turn_records_nothing(server) -> None:
    stub = compiler_grpc.PromptCompilerServiceStub(server.channel())
    request = compiler_pb2.CompilePromptRequest(input=prompt_pb2.PromptCompileInput())
    assert (await stub.CompilePrompt(request)).manifest_event_id == 0
    assert await server.ctx.store.manifests.newest_event_id() == 0
