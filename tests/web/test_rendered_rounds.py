"""What the model saw, kept on request: off by default, bounded when on."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from pioneer_grpc.store.rendered_rounds import RenderedRoundRow
from pioneer_grpc.v1 import history_pb2, manifest_service_pb2, manifest_service_pb2_grpc
from tests.web.agent_loop import THREAD, AgentLoop


async def rounds_of(handle, turn_id: str) -> manifest_service_pb2.ListRenderedRoundsResponse:
    stub = manifest_service_pb2_grpc.ManifestServiceStub(handle.channel())
    return await stub.ListRenderedRounds(
        manifest_service_pb2.ListRenderedRoundsRequest(thread_id=THREAD, turn_id=turn_id),
        metadata=handle.metadata(),
    )


async def stored_rows(handle) -> int:
    async with handle.ctx.store.sessions() as session:
        return int(await session.scalar(select(func.count()).select_from(RenderedRoundRow)))


async def test_off_by_default_keeps_nothing(server):
    loop = AgentLoop(server.channel(), server.metadata(), server.home)
    await loop.two_turns()
    answer = await rounds_of(server, "turn-1")
    assert not answer.kept
    assert list(answer.rounds) == []
    assert await stored_rows(server) == 0


async def test_each_round_is_kept_as_sent(server_factory):
    handle = await server_factory(keep_rendered_requests=True)
    loop = AgentLoop(handle.channel(), handle.metadata(), handle.home)
    await loop.two_turns()
    answer = await rounds_of(handle, "turn-1")
    assert answer.kept
    assert [r.round for r in answer.rounds] == [1, 2]
    first, second = answer.rounds
    for kept, reply in zip(answer.rounds, loop.replies[:2], strict=True):
        assert kept.manifest_event_id == reply.manifest_event_id
        assert kept.history_report == reply.history_report
        assert list(kept.messages) == list(reply.chat_request.messages)
        assert kept.compiled_prompt == reply.chat_request.compiled_prompt
        assert json.loads(kept.provider_body_json) == json.loads(reply.provider_body_json)
        assert kept.provider_path == "/v1/messages"
    assert [m.content for m in first.messages] == ["What's the weather in Oslo?"]
    assert [len(m.tool_calls) for m in second.messages] == [0, 1, 0]
    assert second.history_report.decision == history_pb2.HISTORY_DECISION_FULL
    assert "soul_core" in [s.id for s in first.compiled_prompt.sections]
    turn_2 = await rounds_of(handle, "turn-2")
    # Turn 2 received turn 1 as history.
    assert turn_2.rounds[0].history_report.tokens_before > 0
    assert turn_2.rounds[0].history_report.entries_loaded == 4


@pytest.mark.parametrize("per_thread", [1, 2])
async def test_rounds_per_thread_bound(server_factory, database_url, per_thread):
    handle = await server_factory(
        keep_rendered_requests=True, kept_rounds_per_thread=per_thread, database_url=database_url
    )
    loop = AgentLoop(handle.channel(), handle.metadata(), handle.home)
    await loop.two_turns()
    kept = [*(await rounds_of(handle, "turn-1")).rounds, *(await rounds_of(handle, "turn-2")).rounds]
    assert len(kept) == per_thread
    # The newest stay.
    assert kept[-1].manifest_event_id == loop.replies[-1].manifest_event_id
    assert await stored_rows(handle) == per_thread


async def test_total_bytes_bound_and_age(server_factory):
    probe = await server_factory(keep_rendered_requests=True)
    probe_loop = AgentLoop(probe.channel(), probe.metadata(), probe.home)
    await probe_loop.two_turns()
    one_round = max(r.kept_bytes for r in (await rounds_of(probe, "turn-1")).rounds)
    # Room for two rounds of this size, not three.
    bound = int(one_round * 2.5)
    handle = await server_factory(keep_rendered_requests=True, kept_bytes_total=bound)
    loop = AgentLoop(handle.channel(), handle.metadata(), handle.home)
    await loop.two_turns()
    async with handle.ctx.store.sessions() as session:
        total = int(await session.scalar(select(func.sum(RenderedRoundRow.kept_bytes))))
    assert 0 < total <= bound
    assert await stored_rows(handle) == 2
    expired = await server_factory(keep_rendered_requests=True, kept_max_age_seconds=0)
    expired_loop = AgentLoop(expired.channel(), expired.metadata(), expired.home)
    await expired_loop.two_turns()
    assert list((await rounds_of(expired, "turn-2")).rounds) == []
