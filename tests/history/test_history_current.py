"""The kept history is brought current by completed turns: only their rows are read, and the answer
is the one a whole read gives, whoever wrote them (another server on the same database too)."""

from __future__ import annotations

from pioneer_grpc.store.entries import RowsRead
from pioneer_grpc.v1 import history_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb
from tests.history.agent_turns import tool_turn
from tests.history.rpc import config, create, entry, load, turn

BIG = config(400_000, 16_000)


async def _turns(history, thread_id: str, numbers: range, prefix: str = "") -> int:
    """Appends and completes tool turns; returns how many entries they hold."""
    count = 0
    for i in numbers:
        entries = tool_turn(i, lines=8, prefix=prefix)
        await turn(history, thread_id, entries[0].turn_id, *entries)
        count += len(entries)
    return count


async def _whole(server, history, thread_id: str) -> pb.LoadConversationHistoryResponse:
    """The load read whole: nothing kept."""
    server.ctx.load_cache.clear()
    return await load(history, thread_id)


async def test_a_load_after_completed_turns_reads_those_turns_and_answers_as_a_whole_read(pg_server):
    history = await pg_server.client()
    await create(history, "t", BIG)
    seeded = await _turns(history, "t", range(30))
    before = RowsRead.entries
    first = await load(history, "t")
    assert RowsRead.entries - before == seeded == first.report.entries_kept == 120

    for done in (1, 3):
        added = await _turns(history, "t", range(100 + done * 10, 100 + done * 10 + done))
        before = RowsRead.entries
        current = await load(history, "t")
        assert RowsRead.entries - before == added == 4 * done  # the new turns' rows, not the thread's
        assert current.report.decision == history_pb2.HISTORY_DECISION_FULL
        again = await load(history, "t")  # unchanged: kept, nothing read
        assert RowsRead.entries - before == added
        assert again == current
    whole = await _whole(pg_server, history, "t")
    assert whole == current
    assert whole.report.entries_kept == 120 + 4 + 12


async def test_open_entries_and_an_excluded_turn_stay_out_of_the_kept_history(pg_server):
    history = await pg_server.client()
    await create(history, "t", BIG)
    await _turns(history, "t", range(3))
    await load(history, "t")
    # A turn in progress: its entries are not history, and are not read.
    await history.append_entries(pb.AppendEntriesRequest(thread_id="t", entries=[entry("open-u", "open")]))
    await _turns(history, "t", range(3, 4))
    before = RowsRead.entries
    current = await load(history, "t", exclude="open")
    assert RowsRead.entries - before == 4
    assert "text of open-u" not in [m.content for m in current.messages]
    # Leaving out a completed turn is another question, read whole and kept apart.
    without = await load(history, "t", exclude="turn-3")
    assert without.report.entries_kept == 12
    assert (await load(history, "t")).report.entries_kept == 16
    whole = await _whole(pg_server, history, "t")
    assert whole.messages == current.messages
    assert whole.report.entries_kept == 16


async def test_another_servers_writes_are_seen_exactly(database_url, server_factory):
    one = await server_factory(database_url=database_url)
    other = await server_factory(database_url=database_url)
    mine, theirs = await one.client(), await other.client()
    await create(mine, "t", BIG)
    await _turns(mine, "t", range(5))
    await load(mine, "t")

    await _turns(theirs, "t", range(5, 7))
    before = RowsRead.entries
    current = await load(mine, "t")
    assert RowsRead.entries - before == 8
    assert current.report.entries_kept == 28

    # A turn completed out of order: its entries are older than the newest kept one. The count
    # read with the (no) newer rows says so, and the load reads whole.
    late = tool_turn(50, lines=8)
    await theirs.append_entries(thread_id="t", entries=late)
    await _turns(theirs, "t", range(7, 8))
    assert (await load(mine, "t")).report.entries_kept == 32
    await theirs.complete_turn(thread_id="t", turn_id=late[0].turn_id)
    before = RowsRead.entries
    seen = await load(mine, "t")
    assert RowsRead.entries - before == 36  # no newer rows, then the thread read whole
    assert seen.report.entries_kept == 36
    assert [m.content for m in seen.messages].index(late[0].content) == 28  # in sequence order
    assert seen == await _whole(other, theirs, "t")


async def test_a_summarized_history_is_kept_current_the_same_way(pg_server):
    history = await pg_server.client()
    await create(history, "t", config(3_000, 1_000))
    await _turns(history, "t", range(12))  # over the threshold: the first load summarizes
    summarized = await load(history, "t")
    assert summarized.report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED
    reused = await load(history, "t")
    assert reused.report.summary_use == history_pb2.SUMMARY_USE_REUSED
    await turn(history, "t", "small", entry("s-u", "small", content="and one more thing"))
    before = RowsRead.entries
    current = await load(history, "t")
    assert RowsRead.entries - before == 1
    assert current.report.summary_use == history_pb2.SUMMARY_USE_REUSED
    assert current.messages[-1].content == "and one more thing"
    assert current == await _whole(pg_server, history, "t")
