"""Compiles, manifests and their events, watches, diffs and lists as use cases, on the in-memory store."""

from __future__ import annotations

import asyncio

import pytest

from pioneer_grpc import reasons
from pioneer_grpc.errors import InvalidArgument, NotFound
from pioneer_grpc.service import compile as compiling
from pioneer_grpc.service import history, listing, manifests
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.provider import render_chat
from pioneer_grpc.v1 import (
    chat_pb2,
    history_pb2,
    history_service_pb2,
    manifest_service_pb2,
    prompt_pb2,
    provider_service_pb2,
)
from tests.store.contract.rows import answer, user


def _input(extra: str) -> prompt_pb2.PromptCompileInput:
    return prompt_pb2.PromptCompileInput(profile=prompt_pb2.PROMPT_PROFILE_FULL, extra_system=extra)


async def test_a_compile_on_a_turn_records_its_manifest_as_an_event(ctx: ServiceContext) -> None:
    watching = ctx.hub.subscribe("", capacity=10)
    payload = prompt_pb2.CompiledPromptPayload()
    event_id = await compiling.compile_prompt(ctx, _input("one"), payload, "t", "u1")
    assert event_id > 0 and payload.stable_system_text
    delivered = await watching.next(wait_seconds=5)
    assert delivered is not None and delivered.event.event_id == event_id
    on_turn = await manifests.get_turn_manifest(ctx, "t", "u1")
    assert (
        on_turn.event_id == event_id
        and on_turn.manifest.fingerprint_full == payload.manifest.fingerprint_full
    )
    again = prompt_pb2.CompiledPromptPayload()
    assert await compiling.compile_prompt(ctx, _input("one"), again, "t", "u1") == event_id
    assert await compiling.compile_prompt(ctx, _input("two"), prompt_pb2.CompiledPromptPayload()) == 0
    with pytest.raises(InvalidArgument):
        await compiling.compile_prompt(ctx, _input("x"), prompt_pb2.CompiledPromptPayload(), "t", "")


async def test_two_turns_manifests_diff_by_turn_and_by_event(ctx: ServiceContext) -> None:
    first = await compiling.compile_prompt(ctx, _input("one"), prompt_pb2.CompiledPromptPayload(), "t", "u1")
    await compiling.compile_prompt(ctx, _input("two"), prompt_pb2.CompiledPromptPayload(), "t", "u2")
    base = manifest_service_pb2.ManifestRef(event_id=first)
    target = manifest_service_pb2.ManifestRef(turn=manifest_service_pb2.TurnRef(thread_id="t", turn_id="u2"))
    found = await manifests.diff(ctx, base, target)
    assert found.dynamic_changed and not found.stable_changed
    with pytest.raises(NotFound) as missing:
        await manifests.get_turn_manifest(ctx, "t", "u9")
    assert missing.value.reason == reasons.TURN_NOT_FOUND


async def test_a_watch_streams_the_stored_events_then_the_live_ones(ctx: ServiceContext) -> None:
    ids = [
        await compiling.compile_prompt(ctx, _input(f"n{n}"), prompt_pb2.CompiledPromptPayload(), "t", f"u{n}")
        for n in range(3)
    ]
    watch = manifests.open_watch(ctx, "t", after_event_id=ids[0], live_only=False)
    stream = watch.stream()
    seen = [(await anext(stream)).event.event_id for _ in range(2)]
    assert seen == ids[1:]
    caught_up = await anext(stream)
    assert caught_up.HasField("heartbeat")
    live = await compiling.compile_prompt(ctx, _input("live"), prompt_pb2.CompiledPromptPayload(), "t", "u9")
    assert (await asyncio.wait_for(anext(stream), 5)).event.event_id == live
    await stream.aclose()


async def test_lists_page_through_threads_turns_and_entries(ctx: ServiceContext) -> None:
    for name in ("c", "a", "b"):
        await history.create_thread(ctx, name, history_pb2.ThreadConfig(model="gpt-4o"))
    await history.complete_turn(ctx, "a", "u1", [user("q", "", "hi"), answer("r", "", "hello")])
    threads, token = await listing.list_threads(ctx, history_service_pb2.ListThreadsRequest(page_size=2))
    assert [t.thread_id for t in threads] == ["a", "b"] and token
    rest, token = await listing.list_threads(
        ctx, history_service_pb2.ListThreadsRequest(page_size=2, page_token=token)
    )
    assert [t.thread_id for t in rest] == ["c"] and not token
    newest, _ = await listing.list_threads(
        ctx, history_service_pb2.ListThreadsRequest(order_by="create_time desc")
    )
    assert [t.thread_id for t in newest] == ["b", "a", "c"]
    turns, _ = await listing.list_turns(ctx, history_service_pb2.ListTurnsRequest(thread_id="a"))
    assert [(t.turn_id, t.entry_count) for t in turns] == [("u1", 2)]
    entries, token = await listing.list_entries(
        ctx, history_service_pb2.ListEntriesRequest(thread_id="a", page_size=1)
    )
    assert [e.entry_id for e in entries] == ["q"] and token
    with pytest.raises(InvalidArgument):
        await listing.list_entries(
            ctx, history_service_pb2.ListEntriesRequest(thread_id="b", page_token=token)
        )


async def test_a_chat_request_renders_for_a_provider(ctx: ServiceContext) -> None:
    request = chat_pb2.ChatRequest(
        model="gpt-4o", messages=[chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content="hi")]
    )
    rendered = await render_chat(provider_service_pb2.PROVIDER_OPENAI_RESPONSES, request, None, ctx.models)
    assert rendered.path and b"hi" in bytes(rendered.body)
