"""Past the turn limit, each completed turn pushes the oldest one out of the history: the first
PrepareTurn after it renders the turn that left (to take it off the kept prefix) and the turn
that came, none of the kept ones, and sends the body a render of the whole history sends."""

from __future__ import annotations

from pioneer_grpc.service import history_current, history_load
from pioneer_grpc.v1 import history_pb2, history_service_pb2, provider_service_pb2
from tests.history.agent_turns import tool_turn
from tests.history.rpc import config
from tests.turn.test_prefix_after_completed_turn import EVERY_PREFIX_PROVIDER, Renders, _round
from tests.turn.test_prepare_turn import Client

P = provider_service_pb2
LIMIT = 3
TURNS = 8


@EVERY_PREFIX_PROVIDER
async def test_the_first_round_past_the_turn_limit_renders_the_turns_that_left_and_came_only(
    database_url, server_factory, monkeypatch, provider, model
):
    monkeypatch.setattr(history_load, "MAX_LOADED_TURNS", LIMIT)
    monkeypatch.setattr(history_current, "MAX_LOADED_TURNS", LIMIT)
    one = await server_factory(database_url=database_url)
    other = await server_factory(database_url=database_url)
    mine, theirs = Client(one), Client(other)
    await mine.create_thread(
        history_service_pb2.CreateThreadRequest(thread_id="t", config=config(400_000, 16_000, model=model))
    )
    renders = Renders(monkeypatch)

    for i in range(TURNS):
        reply = await mine.prepare_turn(_round(i, provider))
        calls = renders.taken()
        if i <= 1:
            assert calls == [("whole", 4 * i)]
        elif i <= LIMIT:
            assert calls == [("extended", 4)], (i, calls)
        else:
            # The oldest turn left, the one completed since came: 4 messages each, nothing else.
            assert calls == [("slid", 4), ("extended", 4)], (i, calls)
        assert reply.history_report.entries_kept == 4 * min(i, LIMIT)
        assert reply.provider_body_json

        # The same round on a server that keeps nothing: the whole history rendered from scratch.
        other.ctx.load_cache.clear()
        again = await theirs.prepare_turn(_round(i, provider))
        assert renders.taken() == [("whole", 4 * min(i, LIMIT))]
        assert again.provider_body_json.encode() == reply.provider_body_json.encode()
        assert list(again.provider_notices) == list(reply.provider_notices)
        assert again.history_report == reply.history_report

        rest = tool_turn(i, lines=4)[1:]
        await mine.append_entries(history_service_pb2.AppendEntriesRequest(thread_id="t", entries=rest))
        await mine.complete_turn(
            history_service_pb2.CompleteTurnRequest(thread_id="t", turn_id=rest[0].turn_id)
        )
    assert reply.history_report.decision == history_pb2.HISTORY_DECISION_FULL
