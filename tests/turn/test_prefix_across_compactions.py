"""Across compactions, a thread's rounds send byte-stable bodies: between two compactions each first
PrepareTurn renders the completed turn's messages only after the kept prefix, and every round sends
the body, notices and report of a server that loads and renders the whole history.

Three ways a history is compacted, each in one chunk down to the low-water mark (history_compaction.py):
old tool results cleared at the threshold, the turn cap reached (a summary of the older turns), the
truncate strategy's mark."""

from __future__ import annotations

import pytest

from pioneer_grpc.history import budget, snapshot
from pioneer_grpc.service import history_compaction, history_current, history_load
from pioneer_grpc.v1 import history_pb2, history_service_pb2
from tests.history.agent_turns import tool_turn
from tests.history.rpc import config
from tests.turn.test_prefix_after_completed_turn import EVERY_PREFIX_PROVIDER, Renders, _round
from tests.turn.test_prepare_turn import Client

TRUNCATE = history_pb2.COMPACTION_STRATEGY_TRUNCATE
FULL = history_pb2.HISTORY_DECISION_FULL
CLEARED = history_pb2.HISTORY_DECISION_CLEARED
# (config, lines of each turn's tool result, turns, the turn cap): a threshold the tool results
# reach and clearing brings back; a cap of 6 turns with a budget nothing reaches; truncation.
KINDS = {
    "cleared": (config(9_000, 1_000), 40, 14, None),
    "turn cap": (config(400_000, 16_000), 4, 16, 6),
    "truncated": (config(4_000, 1_000, compaction_strategy=TRUNCATE), 8, 16, None),
}


@pytest.mark.parametrize("kind", list(KINDS))
@EVERY_PREFIX_PROVIDER
async def test_between_compactions_each_round_renders_the_completed_turn_only(
    database_url, server_factory, monkeypatch, provider, model, kind
):
    settings, lines, turns, cap = KINDS[kind]
    if cap is not None:
        for module in (history_load, history_current, snapshot, history_compaction, budget):
            monkeypatch.setattr(module, "MAX_LOADED_TURNS", cap, raising=False)
        for module in (snapshot, history_compaction, budget):
            monkeypatch.setattr(module, "LOW_WATER_TURNS", cap // 2, raising=False)
    one = await server_factory(database_url=database_url)
    other = await server_factory(database_url=database_url)
    mine, theirs = Client(one), Client(other)
    thread = history_service_pb2.CreateThreadRequest(thread_id="t", config=settings)
    thread.config.model = model
    await mine.create_thread(thread)
    renders = Renders(monkeypatch)
    extended = rebuilt = 0
    previous: tuple[str, ...] | None = None
    for i in range(turns):
        request = _round(i, provider)
        request.new_entries[0].CopyFrom(tool_turn(i, lines=lines)[0])
        reply = await mine.prepare_turn(request)
        calls = renders.taken()
        report = reply.history_report
        messages = tuple(m.SerializeToString() for m in reply.chat_request.messages)
        if report.decision in (FULL, CLEARED) and calls == [("extended", 4)]:
            extended += 1
            # The history sent before is sent again as it was, the completed turn after it.
            assert previous is not None and messages[: len(previous)] == previous, i
        elif i > 1:
            rebuilt += 1  # a compaction's round, or the next, which renders the new history whole
        previous = messages
        assert reply.provider_body_json

        # The same round on a server that keeps nothing: the whole history rendered from scratch.
        other.ctx.load_cache.clear()
        again = await theirs.prepare_turn(request)
        renders.taken()
        assert again.provider_body_json.encode() == reply.provider_body_json.encode()
        assert list(again.provider_notices) == list(reply.provider_notices)
        if report.decision in (FULL, CLEARED):
            assert again.history_report == report

        rest = tool_turn(i, lines=lines)[1:]
        await mine.append_entries(history_service_pb2.AppendEntriesRequest(thread_id="t", entries=rest))
        await mine.complete_turn(
            history_service_pb2.CompleteTurnRequest(thread_id="t", turn_id=rest[0].turn_id)
        )
    # Compactions come in chunks (the turn cap of 6 keeps 3 turns: one every third turn here): a
    # few rounds render a new history whole, every other round extends what was sent.
    assert 1 <= rebuilt <= turns // 2, (kind, rebuilt)
    assert extended == turns - 2 - rebuilt, (kind, extended)
