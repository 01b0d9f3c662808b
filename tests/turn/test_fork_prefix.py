"""A fork's first PrepareTurn sends, byte for byte, the body its source sent for the same next turn:
for every provider, on SQLite and PostgreSQL, across cleared tool results and a summary.

The source runs a loop of tool turns, keeping each round's body; then a fork at each completed turn
k prepares turn k+1 with the same request, on a server that keeps nothing of either thread. In the
"cleared" loop a later round summarizes turns a fork holds whole: the fork leaves that summary out,
as the source's next round had none. OpenAI's
prompt_cache_key derives from the thread id: both send the source's (RenderOptions), as a caller
replaying a fork does to keep the provider's cache routing.
"""

from __future__ import annotations

import pytest
from google.protobuf import field_mask_pb2

from pioneer_grpc.client import RpcFailure
from pioneer_grpc.history import budget, snapshot
from pioneer_grpc.service import history_compaction, history_current, history_load
from pioneer_grpc.v1 import history_pb2, history_service_pb2
from tests.history.agent_turns import tool_turn
from tests.history.rpc import config
from tests.turn.test_prefix_after_completed_turn import EVERY_PREFIX_PROVIDER, _round
from tests.turn.test_prepare_turn import Client

H = history_pb2
# (config, lines of each tool result, turns, the turn cap): results the threshold clears; a cap of
# 6 turns that summarizes the older ones.
KINDS = {
    "cleared": (config(9_000, 1_000), 40, 12, None),
    "summarized": (config(400_000, 16_000), 4, 12, 6),
}


def _request(i: int, provider: int, lines: int) -> object:
    request = _round(i, provider)
    request.new_entries[0].CopyFrom(tool_turn(i, lines=lines)[0])
    request.render_options.prompt_cache_thread_id = "t"
    return request


@pytest.mark.parametrize("kind", list(KINDS))
@EVERY_PREFIX_PROVIDER
async def test_a_forks_first_body_is_the_body_its_source_sent_for_that_turn(
    database_url, server_factory, monkeypatch, provider, model, kind
):
    settings, lines, turns, cap = KINDS[kind]
    if cap is not None:
        for module in (history_load, history_current, snapshot, history_compaction, budget):
            monkeypatch.setattr(module, "MAX_LOADED_TURNS", cap, raising=False)
        for module in (snapshot, history_compaction, budget):
            monkeypatch.setattr(module, "LOW_WATER_TURNS", cap // 2, raising=False)
    source_server = await server_factory(database_url=database_url)
    fork_server = await server_factory(database_url=database_url)
    source, forks = Client(source_server), Client(fork_server)
    thread = history_service_pb2.CreateThreadRequest(thread_id="t", config=settings)
    thread.config.model = model
    await source.create_thread(thread)
    bodies: list[bytes] = []
    decisions: set[int] = set()
    for i in range(turns):
        reply = await source.prepare_turn(_request(i, provider, lines))
        bodies.append(reply.provider_body_json.encode())
        decisions.add(reply.history_report.decision)
        rest = tool_turn(i, lines=lines)[1:]
        await source.complete_turn(thread_id="t", turn_id=rest[0].turn_id, entries=rest)
    wanted = H.HISTORY_DECISION_CLEARED if cap is None else H.HISTORY_DECISION_SUMMARIZED
    assert wanted in decisions, decisions
    source_export = b"".join(r.chunk for r in [m async for m in source.export_thread(thread_id="t")])
    for k in range(turns - 1):
        turn_id = tool_turn(k)[0].turn_id
        forked = await forks.fork_thread(source_thread_id="t", source_turn_id=turn_id, thread_id=f"f{k}")
        assert forked.thread.entry_count == 4 * (k + 1)
        request = _request(k + 1, provider, lines)
        request.thread_id = f"f{k}"
        fork_server.ctx.load_cache.clear()
        reply = await forks.prepare_turn(request)
        assert reply.provider_body_json.encode() == bodies[k + 1], (kind, k)
    # The source is as it was.
    again = b"".join(r.chunk for r in [m async for m in source.export_thread(thread_id="t")])
    assert again == source_export


async def test_a_fork_takes_another_model_and_refuses_what_it_cannot_copy(server):
    client = Client(server)
    await client.thread("t")
    for i in range(2):
        await client.complete_turn(thread_id="t", turn_id=f"turn-{i}", entries=tool_turn(i, lines=2))
    await client.append_entries(thread_id="t", entries=[tool_turn(2)[0]])
    forked = await client.fork_thread(
        source_thread_id="t",
        source_turn_id="turn-0",
        config=H.ThreadConfig(model="gpt-4o"),
        config_mask=field_mask_pb2.FieldMask(paths=["model"]),
    )
    assert forked.thread.thread_id.startswith("thr_") and forked.thread.config.model == "gpt-4o"
    assert (forked.thread.entry_count, forked.turn_count, forked.summary_count) == (4, 1, 0)
    source = (await client.get_thread(thread_id="t")).thread
    assert source.config.model == "claude-sonnet-4-5" and source.entry_count == 9
    refused = {
        "nobody": ("NOT_FOUND", "THREAD_NOT_FOUND", {"source_turn_id": "turn-0"}),
        "t": ("NOT_FOUND", "TURN_NOT_FOUND", {"source_turn_id": "turn-9"}),
        "t ": ("FAILED_PRECONDITION", "TURN_NOT_COMPLETED", {"source_turn_id": "turn-2"}),
        "t  ": ("ALREADY_EXISTS", "THREAD_EXISTS", {"source_turn_id": "turn-0", "thread_id": "t"}),
        "t   ": ("INVALID_ARGUMENT", "INVALID_ARGUMENT", {"source_turn_id": "u", "thread_id": "x" * 201}),
    }
    for source_id, (code, reason, fields) in refused.items():
        with pytest.raises(RpcFailure) as failure:
            await client.fork_thread(source_thread_id=source_id.strip(), **fields)
        assert (failure.value.code.name, failure.value.reason) == (code, reason), source_id
