"""A history the truncate strategy truncates every turn: each completed turn pushes the oldest kept
turns out, and the first PrepareTurn after it renders the turns that left (to take them off the
kept prefix) and the turn that came, none of the kept ones, and sends the body, notices and report
of a server that loads and renders the whole history."""

from __future__ import annotations

from pioneer_grpc.store.entries import RowsRead
from pioneer_grpc.v1 import history_pb2, history_service_pb2, provider_service_pb2
from tests.history.agent_turns import tool_turn
from tests.history.rpc import config
from tests.turn.test_prefix_after_completed_turn import EVERY_PREFIX_PROVIDER, Renders, _round
from tests.turn.test_prepare_turn import Client

P = provider_service_pb2
TURNS = 24


@EVERY_PREFIX_PROVIDER
async def test_the_first_round_of_a_truncating_history_renders_the_turns_that_left_and_came_only(
    database_url, server_factory, monkeypatch, provider, model
):
    one = await server_factory(database_url=database_url)
    other = await server_factory(database_url=database_url)
    mine, theirs = Client(one), Client(other)
    strategy = history_pb2.COMPACTION_STRATEGY_TRUNCATE
    await mine.create_thread(
        history_service_pb2.CreateThreadRequest(
            thread_id="t", config=config(3_000, 1_000, model=model, compaction_strategy=strategy)
        )
    )
    renders = Renders(monkeypatch)

    kept = slides = truncated = 0
    for i in range(TURNS):
        before = RowsRead.entries
        reply = await mine.prepare_turn(_round(i, provider))
        read = RowsRead.entries - before
        calls = renders.taken()
        report = reply.history_report
        if i == 0:
            assert calls == [("whole", 0)]
        elif truncated:  # truncated before: brought current by the turn completed since
            assert read == 4, (i, read)
            left = kept + 4 - report.entries_kept
            assert calls == ([("slid", left)] if left else []) + [("extended", 4)], (i, calls)
            slides += left > 0
        truncated += report.decision == history_pb2.HISTORY_DECISION_TRUNCATED
        kept = report.entries_kept
        assert reply.provider_body_json

        # The same round on a server that keeps nothing: the whole history loaded and rendered.
        other.ctx.load_cache.clear()
        again = await theirs.prepare_turn(_round(i, provider))
        assert renders.taken() == [("whole", report.entries_kept)]
        assert again.provider_body_json.encode() == reply.provider_body_json.encode()
        assert list(again.provider_notices) == list(reply.provider_notices)
        assert again.history_report == report

        rest = tool_turn(i, lines=4)[1:]
        await mine.append_entries(history_service_pb2.AppendEntriesRequest(thread_id="t", entries=rest))
        await mine.complete_turn(
            history_service_pb2.CompleteTurnRequest(thread_id="t", turn_id=rest[0].turn_id)
        )
    assert report.decision == history_pb2.HISTORY_DECISION_TRUNCATED
    assert report.entries_dropped > 0
    assert truncated >= TURNS // 2
    assert slides >= TURNS // 3
