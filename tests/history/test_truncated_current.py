"""A history the truncate strategy truncates every turn is kept current by the whole turns completed
after it: only their rows are read, and the answer (messages, report, counts) is the one a whole
read gives, turn after turn, the read's own window sliding too."""

from __future__ import annotations

import os
import random

import pytest

from pioneer_grpc.service import history_current, history_load
from pioneer_grpc.store.entries import RowsRead
from pioneer_grpc.v1 import history_pb2
from tests.history.agent_turns import tool_turn
from tests.history.rpc import ASSISTANT, codes, config, create, entry, load, turn
from tests.history.test_history_current import _random_turn

TRUNCATE = history_pb2.COMPACTION_STRATEGY_TRUNCATE
TRUNCATED = history_pb2.HISTORY_DECISION_TRUNCATED


async def test_a_truncating_turn_reads_the_new_turn_only(pg_server):
    history = await pg_server.client()
    # Budget 5,000, threshold 4,000: about 15 of these tool turns fit.
    await create(history, "t", config(6_000, 1_000, model="m", compaction_strategy=TRUNCATE))
    for i in range(30):
        entries = tool_turn(i, lines=8)
        await turn(history, "t", entries[0].turn_id, *entries)
    first = await load(history, "t")
    assert first.report.decision == TRUNCATED
    assert 0 < first.report.entries_kept < 120
    for i in range(30, 34):
        entries = tool_turn(i, lines=8)
        await turn(history, "t", entries[0].turn_id, *entries)
        before = RowsRead.entries
        current = await load(history, "t")
        assert RowsRead.entries - before == 4  # the new turn's rows, not the thread's 120+
        assert current.report.decision == TRUNCATED
        assert current.report.entries_loaded == 4 * (i + 1)
        assert current.messages[-1].content == entries[-1].content
        pg_server.ctx.load_cache.clear()
        assert current == await load(history, "t")
    # Three turns completed between loads: read and appended together.
    for i in range(34, 37):
        entries = tool_turn(i, lines=8 + 30 * (i - 34))
        await turn(history, "t", entries[0].turn_id, *entries)
    before = RowsRead.entries
    current = await load(history, "t")
    assert RowsRead.entries - before == 12
    assert current.report.entries_loaded == 148
    assert current.report.entries_dropped > 120 - first.report.entries_kept
    pg_server.ctx.load_cache.clear()
    assert current == await load(history, "t")


async def test_new_entries_that_do_not_start_a_turn_read_whole(pg_server):
    history = await pg_server.client()
    await create(history, "t", config(6_000, 1_000, model="m", compaction_strategy=TRUNCATE))
    for i in range(30):
        entries = tool_turn(i, lines=8)
        await turn(history, "t", entries[0].turn_id, *entries)
    await load(history, "t")
    await turn(history, "t", "x", entry("x-a", "x", ASSISTANT, content="a turn without a request"))
    before = RowsRead.entries
    current = await load(history, "t")
    assert RowsRead.entries - before > 100  # read whole
    assert current.report.decision == TRUNCATED
    pg_server.ctx.load_cache.clear()
    assert current == await load(history, "t")


def _loop_turn(rng: random.Random, i: int) -> list[history_pb2.ConversationEntry]:
    """A generated turn; now and then one larger than the budget (cut) or one without a request."""
    shape = rng.random()
    if shape < 0.05:
        entries = tool_turn(i, lines=900)
        for e in entries:
            e.turn_id, e.entry_id = f"turn-{i}", f"big-{e.entry_id}-{i}"
        return entries
    if shape < 0.1:
        return [entry(f"lone{i}", f"turn-{i}", ASSISTANT, content=f"a note {i}")]
    return _random_turn(rng, i)


@pytest.mark.parametrize("limit", [12, 400], ids=["window-sliding", "window-whole"])
async def test_generated_truncating_loops_load_as_a_whole_read_does(
    database_url, server_factory, monkeypatch, limit
):
    monkeypatch.setattr(history_load, "MAX_LOADED_TURNS", limit)
    monkeypatch.setattr(history_current, "MAX_LOADED_TURNS", limit)
    rng = random.Random(int(os.environ.get("HISTORY_SEED", "7")))
    mine = await (await server_factory(database_url=database_url)).client()
    other_server = await server_factory(database_url=database_url)
    theirs = await other_server.client()
    await create(mine, "t", config(6_000, 1_000, model="m", compaction_strategy=TRUNCATE))
    extended = truncated = 0
    for i in range(80):
        entries = _loop_turn(rng, i)
        await turn(mine, "t", f"turn-{i}", *entries)
        before = RowsRead.entries
        kept = await load(mine, "t")
        grew = RowsRead.entries - before == len(entries)
        extended += grew and kept.report.decision == TRUNCATED
        truncated += kept.report.decision == TRUNCATED
        other_server.ctx.load_cache.clear()
        whole = await load(theirs, "t")
        assert kept == whole, f"turn {i}"
        assert kept.report.entries_kept + kept.report.entries_dropped == kept.report.entries_loaded
    assert truncated >= 60
    assert extended >= 40
    if limit == 12:
        assert "turn_limit_reached" in codes(kept)
