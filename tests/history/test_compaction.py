"""Compaction that keeps continuity: clearing old tool results first, a summary that uses
its target, the thread's strategy, and no compaction loop."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf import field_mask_pb2

from pioneer_grpc.history.render import summary_text
from pioneer_grpc.history.tokens import count_tokens
from pioneer_grpc.providers.render import render
from pioneer_grpc.v1 import chat_pb2, history_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb
from tests.history.agent_turns import decision_text, path, request_text, tool_turn
from tests.history.fake_openai import FakeOpenAI, completion
from tests.history.rpc import codes, config, create, failure, load, turn
from tests.history.test_poisoned_threads import PROVIDERS

CLEAR = history_pb2.COMPACTION_STRATEGY_CLEAR_THEN_SUMMARIZE
SUMMARIZE = history_pb2.COMPACTION_STRATEGY_SUMMARIZE
TRUNCATE = history_pb2.COMPACTION_STRATEGY_TRUNCATE


async def add_turns(history, thread_id: str, turns, lines: int, start: int = 0) -> None:
    for i in range(start, start + turns):
        entries = tool_turn(i, lines)
        await turn(history, thread_id, entries[0].turn_id, *entries)


async def test_compaction_keeps_most_of_its_target_not_0_2_percent(pg_server):
    # About 99,000 tokens in 200 entries (50 tool-heavy turns); budget 112,000, target 11,200.
    history = await pg_server.client()
    await create(history, "t", config(compaction_strategy=SUMMARIZE, model="m"))
    await add_turns(history, "t", 50, lines=100)
    response = await load(history, "t")
    report = response.report
    assert 95_000 < report.tokens_before < 105_000
    assert report.entries_loaded == 200
    assert report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED
    assert report.summary_target_tokens == 11_200
    # The summary stands for the older turns; the newest whole turns that fit under the low-water
    # mark (40% of the budget) beside it stay as they were.
    message, *kept = response.messages
    assert kept[0].role == chat_pb2.CHAT_ROLE_USER
    first_kept = int(kept[0].content.split("src/module_")[1].split("/")[0])
    assert 30 <= first_kept <= 45, first_kept
    assert request_text(first_kept) == kept[0].content
    assert report.tokens_after <= report.low_water_tokens == 33_600
    [tokens] = await count_tokens([message.content])
    # The old summarizer kept 172 tokens (0.2% of the conversation, 1.5% of its target).
    assert 0.6 * 11_200 <= tokens <= 11_200, tokens
    summary = message.content
    last = first_kept - 1
    assert request_text(last) in summary  # the latest request it covers, the turns before as said
    assert decision_text(last) in summary
    assert path(last) in summary
    assert path(20) in summary  # file paths of older turns survive as items
    assert request_text(first_kept) not in summary
    assert "Decisions:" in summary


async def test_old_tool_results_are_cleared_before_any_summary(pg_server):
    # Budget 10,000 (threshold 8,000); 12 turns of about 850 tokens: 10,200 tokens, over it.
    history = await pg_server.client()
    await create(history, "t", config(12_000, 2_000, model="m"))
    await add_turns(history, "t", 12, lines=40)
    response = await load(history, "t")
    report = response.report
    assert report.decision == history_pb2.HISTORY_DECISION_CLEARED
    assert report.compaction_strategy == CLEAR
    assert report.summary_use == history_pb2.SUMMARY_USE_NONE
    # The oldest results are cleared, in one chunk at the turn that reached the threshold, down to
    # the low-water mark (4,000); each stays a valid answer to its call.
    cleared = [c.entry_id for c in report.cleared_tool_results]
    assert cleared == [f"r{i}" for i in range(len(cleared))]
    assert 3 <= len(cleared) < 9
    saved = sum(c.tokens_before - c.tokens_after for c in report.cleared_tool_results)
    assert report.cleared_tokens_saved == saved > 2_000
    assert report.tokens_after == report.tokens_before - saved < report.threshold_tokens
    assert codes(response) == ["tool_results_cleared"]
    tools = [m for m in response.messages if m.role == chat_pb2.CHAT_ROLE_TOOL]
    assert len(tools) == 12
    assert [m.tool_call_id for m in tools] == [f"call-{i}" for i in range(12)]
    assert tools[0].content == (
        "[Result cleared to save context: 759 tokens of read_file output (call call-0). "
        "Call read_file again with the same arguments to see it.]"
    )
    assert tools[len(cleared)].content.startswith(f"def helper_{len(cleared)}_0(value):")
    assert tools[-1].content.startswith("def helper_11_0(value):")
    chat = chat_pb2.ChatRequest(model="m", messages=response.messages)
    for provider in PROVIDERS:
        render(provider, chat)
    assert not (await history.get_thread_summary(thread_id="t")).HasField("summary")
    # Still over after clearing: summarized, and the report says clearing was not enough.
    await add_turns(history, "t", 80, lines=2, start=12)
    response = await load(history, "t")
    assert response.report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED
    assert codes(response) == ["clearing_insufficient"]


async def test_the_thread_picks_the_strategy(pg_server):
    history = await pg_server.client()
    thread = await create(history, "t", config(12_000, 2_000, model="m"))
    # Unset is the default (clear-then-summarize, keep 3); the config says what was set.
    assert thread.config.compaction_strategy == history_pb2.COMPACTION_STRATEGY_UNSPECIFIED
    assert not thread.config.HasField("keep_tool_results")
    await add_turns(history, "t", 12, lines=40)
    updated = await history.update_thread(
        pb.UpdateThreadRequest(
            thread_id="t",
            config=history_pb2.ThreadConfig(compaction_strategy=TRUNCATE),
            update_mask=field_mask_pb2.FieldMask(paths=["compaction_strategy"]),
        )
    )
    assert updated.thread.config.compaction_strategy == TRUNCATE
    response = await load(history, "t")
    assert response.report.decision == history_pb2.HISTORY_DECISION_TRUNCATED
    assert response.report.summary_use == history_pb2.SUMMARY_USE_NONE
    assert response.messages[0].role == chat_pb2.CHAT_ROLE_USER
    assert response.report.tokens_after <= response.report.low_water_tokens
    # The truncation is kept as a mark (a summary row with no text), so later loads read only the
    # turns after it: the same turns, round after round.
    mark = (await history.get_thread_summary(thread_id="t")).summary
    assert (mark.text, mark.summarizer) == ("", "truncate")
    again = await load(history, "t")
    assert again.report.decision == history_pb2.HISTORY_DECISION_FULL
    assert list(again.messages) == list(response.messages)
    # keep_tool_results 0 clears every result (still whole pairs) once clearing starts.
    await history.update_thread(
        pb.UpdateThreadRequest(
            thread_id="t",
            config=history_pb2.ThreadConfig(compaction_strategy=CLEAR, keep_tool_results=0),
        )
    )
    thread = (await history.get_thread(pb.GetThreadRequest(thread_id="t"))).thread
    assert (thread.config.compaction_strategy, thread.config.keep_tool_results) == (CLEAR, 0)
    error = await failure(
        history.update_thread(
            pb.UpdateThreadRequest(thread_id="t", config=history_pb2.ThreadConfig(keep_tool_results=-1))
        )
    )
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert error.violations == [("config.keep_tool_results", "must be 0 to 1000, got -1")]


@pytest.fixture
async def oversized():
    server = await FakeOpenAI(reply=lambda body: completion("word " * 3000)).start()
    yield server
    await server.close()


async def test_a_compaction_that_cannot_succeed_is_not_retried_every_round(
    server_factory, database_url, oversized
):
    server = await server_factory(
        database_url=database_url, summarizer="openai", summarizer_base_url=oversized.base_url
    )
    history = await server.client()
    await create(history, "t", config(12_000, 2_000, model="m", compaction_strategy=SUMMARIZE))
    await add_turns(history, "t", 12, lines=40)
    first = await load(history, "t")
    assert codes(first) == ["summary_rejected"]
    assert len(oversized.requests) == 1
    # Every later round (loads of the same history, then small new turns) truncates without asking.
    for i in range(3):
        again = await load(history, "t")
        assert codes(again) == ["compaction_deferred"]
        assert again.report.decision == history_pb2.HISTORY_DECISION_TRUNCATED
        await add_turns(history, "t", 1, lines=1, start=100 + i)
    assert len(oversized.requests) == 1
    # Once the history grew by the summary target (1,000 tokens), it is tried again.
    await add_turns(history, "t", 2, lines=40, start=200)
    retried = await load(history, "t")
    assert codes(retried) == ["summary_rejected"]
    assert len(oversized.requests) == 2


async def test_summary_text_of_a_small_conversation_stays_items_only():
    # A summary never costs more than half of what it replaces, so a short conversation
    # keeps its items only (and compaction still makes progress).
    from pioneer_grpc.history.summarizers import ExtractiveSummarizer, SummaryRequest

    entries = tool_turn(1, lines=2)
    for e in entries:
        [e.token_count] = await count_tokens([e.content])
    text = await ExtractiveSummarizer().summarize(
        SummaryRequest(entries=entries, previous_summary="", target_tokens=2_000, model="")
    )
    [tokens] = await count_tokens([summary_text(text)])
    assert tokens <= sum(e.token_count + 4 for e in entries)
    assert "Recent turns" not in text
    assert path(1) in text
