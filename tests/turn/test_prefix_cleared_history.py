"""A cleared history (over the threshold, under it once old tool results are cleared) clears one
more result each completed turn: the first PrepareTurn after it renders the turns sent anew from
that result's turn on and the completed one only, none of the kept ones, and sends the body a
render of the whole history sends."""

from __future__ import annotations

from pioneer_grpc.v1 import history_pb2, history_service_pb2, provider_service_pb2
from tests.history.agent_turns import tool_turn
from tests.history.rpc import config
from tests.turn.test_prefix_after_completed_turn import EVERY_PREFIX_PROVIDER, Renders, _round
from tests.turn.test_prepare_turn import Client

P = provider_service_pb2
TURNS = 10
LINES = 40  # a tool result of about 800 tokens: clearing it saves most of them


@EVERY_PREFIX_PROVIDER
async def test_the_first_round_of_a_cleared_history_renders_the_turns_sent_anew_only(
    database_url, server_factory, monkeypatch, provider, model
):
    one = await server_factory(database_url=database_url)
    other = await server_factory(database_url=database_url)
    mine, theirs = Client(one), Client(other)
    await mine.create_thread(
        history_service_pb2.CreateThreadRequest(thread_id="t", config=config(7_000, 1_000, model=model))
    )
    renders = Renders(monkeypatch)

    cleared_rounds = 0
    previous = None
    for i in range(TURNS):
        request = _round(i, provider)
        request.new_entries[0].CopyFrom(tool_turn(i, lines=LINES)[0])
        reply = await mine.prepare_turn(request)
        calls = renders.taken()
        report = reply.history_report
        if previous == report.decision == history_pb2.HISTORY_DECISION_CLEARED:
            # The result now older than the newest 3 is cleared: its turn and the two after it
            # are taken off the kept prefix and sent anew, with the turn completed since.
            assert calls == [("cut", 12), ("extended", 16)], (i, calls)
            cleared_rounds += 1
        assert reply.provider_body_json

        # The same round on a server that keeps nothing: the whole history rendered from scratch.
        other.ctx.load_cache.clear()
        again = await theirs.prepare_turn(request)
        assert renders.taken() == [("whole", len(reply.chat_request.messages) - 1)]
        assert again.provider_body_json.encode() == reply.provider_body_json.encode()
        assert list(again.provider_notices) == list(reply.provider_notices)
        assert again.history_report == report

        rest = tool_turn(i, lines=LINES)[1:]
        await mine.append_entries(history_service_pb2.AppendEntriesRequest(thread_id="t", entries=rest))
        await mine.complete_turn(
            history_service_pb2.CompleteTurnRequest(thread_id="t", turn_id=rest[0].turn_id)
        )
        previous = report.decision
    assert cleared_rounds >= 3
