"""The kept history is brought current by completed turns: only their rows are read, and the answer
is the one a whole read gives, whoever wrote them (another server on the same database too)."""

from __future__ import annotations

import json
import os
import random

import pytest

from pioneer_grpc.history.budget import LOW_WATER_TURNS, MAX_LOADED_TURNS
from pioneer_grpc.store.entries import RowsRead
from pioneer_grpc.v1 import common_pb2, history_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb
from tests.history.agent_turns import tool_turn
from tests.history.rpc import ASSISTANT, TOOL, codes, config, create, entry, load, tool_call, turn
from tests.history.rpc import turn_in_one_call as in_one_call
from tests.history.test_entry_media import image, png

BIG = config(400_000, 16_000)


async def _turns(history, thread_id: str, numbers: range, prefix: str = "", completing=turn) -> int:
    """Appends and completes tool turns (`completing` each); returns how many entries they hold."""
    count = 0
    for i in numbers:
        entries = tool_turn(i, lines=8, prefix=prefix)
        await completing(history, thread_id, entries[0].turn_id, *entries)
        count += len(entries)
    return count


async def _whole(server, history, thread_id: str) -> pb.LoadConversationHistoryResponse:
    """The load read whole: nothing kept."""
    server.ctx.load_cache.clear()
    return await load(history, thread_id)


@pytest.mark.parametrize("completing", [turn, in_one_call], ids=["appended-then-completed", "one-call"])
async def test_a_load_after_completed_turns_reads_those_turns_and_answers_as_a_whole_read(
    pg_server, completing
):
    history = await pg_server.client()
    await create(history, "t", BIG)
    seeded = await _turns(history, "t", range(30))
    before = RowsRead.entries
    first = await load(history, "t")
    assert RowsRead.entries - before == seeded == first.report.entries_kept == 120

    for done in (1, 3):
        added = await _turns(
            history, "t", range(100 + done * 10, 100 + done * 10 + done), completing=completing
        )
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


def _same_call_id(entries: list[history_pb2.ConversationEntry]) -> list[history_pb2.ConversationEntry]:
    """The turn with its call named `call_0`, as models that number calls per turn name them."""
    for e in entries:
        for call in e.tool_calls:
            call.id = "call_0"
        if e.tool_call_id:
            e.tool_call_id = "call_0"
    return entries


async def test_a_call_id_used_again_by_later_turns_is_read_with_those_turns_only(pg_server):
    history = await pg_server.client()
    await create(history, "t", BIG)
    for i in range(20):
        entries = _same_call_id(tool_turn(i, lines=8))
        await turn(history, "t", entries[0].turn_id, *entries)
    await load(history, "t")
    for i in range(20, 23):
        entries = _same_call_id(tool_turn(i, lines=8))
        await turn(history, "t", entries[0].turn_id, *entries)
    before = RowsRead.entries
    current = await load(history, "t")
    assert RowsRead.entries - before == 12
    assert current.report.entries_kept == 92
    assert [m.tool_call_id for m in current.messages].count("call_0") == 23
    assert current.report.diagnostics == []
    assert current == await _whole(pg_server, history, "t")


async def test_a_compaction_replaces_the_kept_history(pg_server):
    history = await pg_server.client()
    await create(history, "t", config(3_000, 1_000))
    await _turns(history, "t", range(2))
    kept_before = await load(history, "t")
    assert kept_before.report.decision == history_pb2.HISTORY_DECISION_FULL
    await _turns(history, "t", range(2, 12))
    summarized = await load(history, "t")
    assert summarized.report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED
    # What is kept now is the summary alone, for the state the compaction committed.
    kept = pg_server.ctx.load_cache.extendable(("default", "t"))
    assert kept is not None
    assert kept.state.summary_id is not None
    assert list(kept.result.messages) == list(summarized.messages)
    before = RowsRead.entries
    reused = await load(history, "t")
    assert RowsRead.entries - before == 0
    assert reused.report.summary_use == history_pb2.SUMMARY_USE_REUSED
    assert reused == await _whole(pg_server, history, "t")

    await load(history, "t")  # kept again after the whole read
    await turn(history, "t", "small", entry("s-u", "small", content="and one more thing"))
    before = RowsRead.entries
    current = await load(history, "t")
    assert RowsRead.entries - before == 1
    assert current.messages[-1].content == "and one more thing"
    assert current == await _whole(pg_server, history, "t")


async def _small(history, i: int) -> None:
    turn_id = f"turn-{i}"
    await turn(history, "t", turn_id, entry(f"u{i}", turn_id), entry(f"a{i}", turn_id, ASSISTANT))


async def test_at_the_turn_cap_the_history_is_compacted_once_and_the_turns_after_it_extend_it(pg_server):
    history = await pg_server.client()
    await create(history, "t", BIG)
    await _turns(history, "t", range(2))  # two tool turns first
    for i in range(2, MAX_LOADED_TURNS - 1):
        await _small(history, i)
    first = await load(history, "t")
    assert first.report.entries_kept == 8 + 2 * (MAX_LOADED_TURNS - 3)
    assert codes(first) == []

    for i in range(MAX_LOADED_TURNS - 1, MAX_LOADED_TURNS + 2):
        await _small(history, i)  # 202 turns: the cap compacts, the newest 100 turns stay
    current = await load(history, "t")
    assert codes(current) == ["turn_limit_reached", "turn_cap_compacted"]
    assert current.report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED
    assert current.messages[1].content == f"text of u{MAX_LOADED_TURNS + 2 - LOW_WATER_TURNS}"
    assert len(current.messages) == 1 + 2 * LOW_WATER_TURNS

    for i in range(MAX_LOADED_TURNS + 2, MAX_LOADED_TURNS + 4):
        await _small(history, i)
    before = RowsRead.entries
    later = await load(history, "t")
    assert RowsRead.entries - before == 4  # the new turns' rows: the kept history extended
    assert later.report.decision == history_pb2.HISTORY_DECISION_FULL
    assert list(later.messages[: len(current.messages)]) == list(current.messages)
    assert later == await _whole(pg_server, history, "t")


async def test_a_cleared_history_is_kept_current_with_the_new_turns_as_they_are(pg_server):
    history = await pg_server.client()
    await create(history, "t", config(12_000, 2_000, model="m"))
    for i in range(12):
        entries = tool_turn(i, lines=40)
        await turn(history, "t", entries[0].turn_id, *entries)
    cleared = await load(history, "t")
    assert cleared.report.decision == history_pb2.HISTORY_DECISION_CLEARED
    ids = [c.entry_id for c in cleared.report.cleared_tool_results]
    assert ids == [f"r{i}" for i in range(len(ids))]

    kept = list(cleared.messages)
    for i in (12, 13):
        entries = tool_turn(i, lines=40)
        await turn(history, "t", entries[0].turn_id, *entries)
        before = RowsRead.entries
        current = await load(history, "t")
        assert RowsRead.entries - before == 4
        assert current.report.decision == history_pb2.HISTORY_DECISION_CLEARED
        # Nothing more is cleared until the threshold: the earlier messages stay byte for byte.
        assert [c.entry_id for c in current.report.cleared_tool_results] == ids
        assert list(current.messages[: len(kept)]) == kept
        assert codes(current) == ["tool_results_cleared"]
        assert current == await _whole(pg_server, history, "t")
        kept = list(current.messages)
        await load(history, "t")  # the whole read kept again, cleared: the next turn extends it


def _random_turn(rng: random.Random, i: int) -> list[history_pb2.ConversationEntry]:
    """A turn of a generated agent loop: a plain answer, or calls (ids every turn uses again) with
    results of any size, some smaller than the placeholder that would clear them, a few with an image."""
    turn_id = f"turn-{i}"
    entries = [entry(f"u{i}", turn_id, content=f"request {i} " + "word " * rng.randint(0, 40))]
    for step in range(rng.choice((0, 1, 1, 2))):
        calls = [
            tool_call(f"call_{k}", "read_file", json.dumps({"path": f"f{i}_{k}"}))
            for k in range(rng.randint(1, 2))
        ]
        entries.append(entry(f"a{i}_{step}", turn_id, ASSISTANT, content="", tool_calls=calls))
        for k, call in enumerate(calls):
            size = rng.choice((0, 2, 30, 120))
            content = (
                "ok" if size == 0 else "\n".join(f"line {j} of {call.id} in turn {i}" for j in range(size))
            )
            result = entry(
                f"r{i}_{step}_{k}", turn_id, TOOL, content=content, tool_call_id=call.id, name="read_file"
            )
            if rng.random() < 0.15:  # a screenshot with it
                result.content_parts.append(image(png(32, 24)))
            entries.append(result)
    entries.append(entry(f"f{i}", turn_id, ASSISTANT, content=f"answer {i}"))
    return entries


async def test_generated_loops_load_after_each_turn_as_a_whole_read_does(database_url, server_factory):
    rng = random.Random(int(os.environ.get("HISTORY_SEED", "22")))
    mine = await (await server_factory(database_url=database_url)).client()
    other_server = await server_factory(database_url=database_url)
    theirs = await other_server.client()
    # Threshold 4,000: the loop passes it and is cleared, then summarized when clearing no longer does.
    await create(mine, "t", config(6_000, 1_000, model="m", keep_tool_results=rng.randint(0, 3)))
    extended = decisions = 0
    for i in range(60):
        entries = _random_turn(rng, i)
        await rng.choice([turn, in_one_call])(mine, "t", f"turn-{i}", *entries)
        before = RowsRead.entries
        kept = await load(mine, "t")
        extended += RowsRead.entries - before == len(entries)
        decisions |= 1 << kept.report.decision
        if kept.report.summary_use == history_pb2.SUMMARY_USE_CREATED:
            continue  # the whole read after it reuses that summary: the rest is compared
        assert kept == await _whole(other_server, theirs, "t"), f"turn {i}"
    # Every kind of kept history was brought current, most loads by the new turn's rows only.
    assert decisions & (1 << history_pb2.HISTORY_DECISION_FULL)
    assert decisions & (1 << history_pb2.HISTORY_DECISION_CLEARED)
    assert decisions & (1 << history_pb2.HISTORY_DECISION_SUMMARIZED)
    assert extended >= 40


def _screenshot_turn(i: int, noted: bool) -> list[history_pb2.ConversationEntry]:
    """A computer-use turn: the user's message with a document (of no stated size when `noted`:
    counted with an assumed size and a diagnostic), a screenshot call, its result (an image part)
    and the answer."""
    turn_id = f"turn-{i}"
    size = {} if noted else {"page_count": 2}
    doc = common_pb2.ArtifactRef(
        artifact_id=f"doc-{i}", display_name=f"d{i}.pdf", mime_type="application/pdf", **size
    )
    call = tool_call(f"call_{i % 2}", "screenshot", "{}")  # ids used again, as models do
    return [
        entry(f"u{i}", turn_id, content=f"Check page {i}.", artifact_refs=[doc]),
        entry(f"a{i}", turn_id, ASSISTANT, content="", tool_calls=[call]),
        entry(
            f"r{i}",
            turn_id,
            TOOL,
            content=f"screen {i}",
            tool_call_id=call.id,
            name="screenshot",
            content_parts=[image(png(64 + i, 48))],
        ),
        entry(f"f{i}", turn_id, ASSISTANT, content=f"page {i} is fine"),
    ]


async def test_turns_with_screenshots_and_documents_are_read_alone_and_counted_as_a_whole_read_does(
    database_url, server_factory
):
    mine = await (await server_factory(database_url=database_url)).client()
    other_server = await server_factory(database_url=database_url)
    theirs = await other_server.client()
    await create(mine, "t", config(400_000, 16_000, model="claude-sonnet-4-5"))
    await load(mine, "t")
    for i in range(8):
        entries = _screenshot_turn(i, noted=i % 3 == 0)
        await turn(mine, "t", f"turn-{i}", *entries)
        before = RowsRead.entries
        current = await load(mine, "t")
        if i:  # the first load after the empty thread's reads what there is
            assert RowsRead.entries - before == len(entries), f"turn {i}"
        assert current == await _whole(other_server, theirs, "t"), f"turn {i}"
    # Each document of no stated size has its note, in order; the documents of stated size alone
    # (two pages of 3,000) cost more than every message's text.
    assert codes(current) == ["attachment_size_assumed"] * 3
    assert [d.entry_id for d in current.report.diagnostics] == ["u0", "u3", "u6"]
    text = sum(len(m.content) for m in current.messages)
    assert current.report.tokens_before > text + 5 * 2 * 3_000


async def test_at_the_turn_cap_the_notes_of_the_turns_that_leave_go_with_them(pg_server):
    history = await pg_server.client()
    await create(history, "t", config(2_000_000, 16_000, model="claude-sonnet-4-5"))
    for i in range(MAX_LOADED_TURNS):
        turn_id = f"turn-{i}"
        refs = [common_pb2.ArtifactRef(artifact_id=f"scan-{i}", display_name="s.jpg", mime_type="image/jpeg")]
        noted = i in (0, 1, 150)
        await turn(
            history,
            "t",
            turn_id,
            entry(f"u{i}", turn_id, artifact_refs=refs if noted else []),
            entry(f"a{i}", turn_id, ASSISTANT),
        )
    compacted = await load(history, "t")  # at the cap: the oldest 100 turns summarized
    assert codes(compacted) == ["attachment_size_assumed"] * 3 + ["turn_cap_compacted"]
    for i in range(MAX_LOADED_TURNS, MAX_LOADED_TURNS + 2):
        turn_id = f"turn-{i}"
        await turn(history, "t", turn_id, *_screenshot_turn(i, noted=True))
    before = RowsRead.entries
    current = await load(history, "t")
    assert RowsRead.entries - before == 8
    assert codes(current) == ["attachment_size_assumed"] * 3
    assert [d.entry_id for d in current.report.diagnostics] == [
        "u150",
        f"u{MAX_LOADED_TURNS}",
        f"u{MAX_LOADED_TURNS + 1}",
    ]
    assert current == await _whole(pg_server, history, "t")


async def test_a_cleared_history_takes_turns_with_screenshots_without_a_whole_read(
    database_url, server_factory
):
    mine = await (await server_factory(database_url=database_url)).client()
    other_server = await server_factory(database_url=database_url)
    theirs = await other_server.client()
    # Threshold 12,000: a turn is about 1,900 tokens, so the seventh puts the history over it;
    # clearing down to the low-water mark (4,500) brings it back under, and the next turns are
    # appended to the cleared history as they are.
    await create(mine, "t", config(16_000, 1_000, model="claude-sonnet-4-5", keep_tool_results=1))
    scan = common_pb2.ArtifactRef(artifact_id="scan", display_name="s.jpg", mime_type="image/jpeg")
    extended = 0
    for i in range(10):
        entries = _screenshot_turn(i, noted=False)
        del entries[0].artifact_refs[:]
        if i == 0:
            entries[0].artifact_refs.append(scan)  # of no stated size: a note that stays
        entries[2].content = "\n".join(f"line {j} of the page in turn {i}" for j in range(150))
        await turn(mine, "t", f"turn-{i}", *entries)
        before = RowsRead.entries
        current = await load(mine, "t")
        cleared = current.report.decision == history_pb2.HISTORY_DECISION_CLEARED
        extended += cleared and RowsRead.entries - before == len(entries)
        assert current == await _whole(other_server, theirs, "t"), f"turn {i}"
    assert extended >= 2
    first = current.report.diagnostics[0]
    assert (first.code, first.entry_id) == ("attachment_size_assumed", "u0")
    assert current.report.cleared_tool_results
