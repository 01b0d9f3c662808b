"""The truncate strategy leaves out the oldest turns in chunks: at the threshold (or the turn cap) a
mark is stored, and the turns completed after it extend the kept history, only their rows read and
the answer (messages, report, counts) the one a whole read gives, until the threshold again."""

from __future__ import annotations

import os
import random

from pioneer_grpc.store.entries import RowsRead
from pioneer_grpc.v1 import history_pb2
from tests.history.agent_turns import tool_turn
from tests.history.rpc import ASSISTANT, config, create, entry, load, turn
from tests.history.test_history_current import _random_turn

TRUNCATE = history_pb2.COMPACTION_STRATEGY_TRUNCATE
TRUNCATED = history_pb2.HISTORY_DECISION_TRUNCATED
FULL = history_pb2.HISTORY_DECISION_FULL


async def test_a_truncation_is_a_chunk_and_the_turns_after_it_extend_the_kept_history(pg_server):
    history = await pg_server.client()
    # Budget 5,000: threshold 4,000, low water 1,500; a tool turn of 8 lines is about 250 tokens.
    await create(history, "t", config(6_000, 1_000, model="m", compaction_strategy=TRUNCATE))
    for i in range(30):
        entries = tool_turn(i, lines=8)
        await turn(history, "t", entries[0].turn_id, *entries)
    first = await load(history, "t")
    assert first.report.decision == TRUNCATED
    assert first.report.tokens_after <= first.report.low_water_tokens
    kept = list(first.messages)
    truncations = 0
    for i in range(30, 46):
        entries = tool_turn(i, lines=8)
        await turn(history, "t", entries[0].turn_id, *entries)
        before = RowsRead.entries
        current = await load(history, "t")
        if current.report.decision == TRUNCATED:
            truncations += 1
            kept = list(current.messages)
            continue
        assert RowsRead.entries - before == 4  # the new turn's rows, not the thread's 120+
        assert current.report.decision == FULL
        # The earlier messages as they were: the turn appended after them.
        assert list(current.messages[: len(kept)]) == kept
        assert current.messages[-1].content == entries[-1].content
        kept = list(current.messages)
        pg_server.ctx.load_cache.clear()
        assert current == await load(history, "t")
    assert 1 <= truncations <= 2


async def test_new_entries_that_do_not_start_a_turn_read_whole(pg_server):
    history = await pg_server.client()
    await create(history, "t", config(6_000, 1_000, model="m", compaction_strategy=TRUNCATE))
    for i in range(30):
        entries = tool_turn(i, lines=8)
        await turn(history, "t", entries[0].turn_id, *entries)
    await load(history, "t")
    await turn(history, "t", "x", entry("x-a", "x", ASSISTANT, content="a turn without a request"))
    current = await load(history, "t")
    pg_server.ctx.load_cache.clear()
    assert current == await load(history, "t")


async def test_generated_truncating_loops_load_as_a_whole_read_does(database_url, server_factory):
    rng = random.Random(int(os.environ.get("HISTORY_SEED", "7")))
    mine = await (await server_factory(database_url=database_url)).client()
    other_server = await server_factory(database_url=database_url)
    theirs = await other_server.client()
    await create(mine, "t", config(6_000, 1_000, model="m", compaction_strategy=TRUNCATE))
    extended = truncated = 0
    for i in range(80):
        entries = _random_turn(rng, i)
        await turn(mine, "t", f"turn-{i}", *entries)
        before = RowsRead.entries
        kept = await load(mine, "t")
        extended += RowsRead.entries - before == len(entries) and kept.report.decision == FULL
        truncated += kept.report.decision == TRUNCATED
        other_server.ctx.load_cache.clear()
        whole = await load(theirs, "t")
        # The round that stores a mark says so; every later load reads the mark as stored.
        if kept.report.decision != TRUNCATED:
            assert kept.report == whole.report, f"turn {i}"
        assert list(kept.messages) == list(whole.messages), f"turn {i}"
    # The truncations come in chunks (21 of 80 turns with seed 7: some turns alone are near the
    # 4,000-token threshold), never every turn.
    assert 1 <= truncated <= 30
    assert extended >= 40
