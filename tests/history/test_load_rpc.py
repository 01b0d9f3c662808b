"""LoadConversationHistory end to end on SQLite and PostgreSQL, with the embedded summarizer.

Thread budget in most tests: 2,000 - 1,000 = 1,000 tokens; threshold 800, target 100.
"""

from __future__ import annotations

import grpc

from pioneer_grpc.history import tokens
from pioneer_grpc.v1 import chat_pb2, history_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb
from tests.history.rpc import (
    ASSISTANT,
    TOOL,
    codes,
    config,
    create,
    entry,
    failure,
    load,
    tool_call,
    turn,
)

SMALL = config(2_000, 1_000, model="m")
# 96 tokens: 4 + 96 = 100 per message with overhead.
WORDS_96 = " ".join(["word"] * 96)


async def fill(history, thread_id: str, turns: int, start: int = 0) -> None:
    for i in range(start, start + turns):
        await turn(
            history,
            thread_id,
            f"turn-{i}",
            entry(f"u{i}", f"turn-{i}", content=WORDS_96),
            entry(f"a{i}", f"turn-{i}", ASSISTANT, content=WORDS_96),
        )


async def test_words_fixture_is_96_tokens():
    assert await tokens.count_tokens([WORDS_96]) == [96]


async def test_under_threshold_everything_goes_in_order(pg_server):
    history = await pg_server.client()
    await create(history, "t", SMALL)
    await fill(history, "t", 3)
    response = await load(history, "t")
    assert [m.role for m in response.messages] == [chat_pb2.CHAT_ROLE_USER, chat_pb2.CHAT_ROLE_ASSISTANT] * 3
    report = response.report
    assert report.decision == history_pb2.HISTORY_DECISION_FULL
    assert report.summary_use == history_pb2.SUMMARY_USE_NONE
    assert (report.tokens_before, report.tokens_after, report.entries_loaded, report.entries_kept) == (
        600,
        600,
        6,
        6,
    )
    assert (report.budget_tokens, report.threshold_tokens, report.summary_target_tokens) == (1000, 800, 100)


async def test_a_load_never_retokenizes(pg_server, monkeypatch):
    history = await pg_server.client()
    await create(history, "t", SMALL)
    await fill(history, "t", 3)

    def refuse(texts):
        raise AssertionError("a load must use stored counts")

    monkeypatch.setattr(tokens, "count_blocking", refuse)
    assert (await load(history, "t")).report.tokens_after == 600


async def test_at_threshold_one_summary_message_then_reuse_with_newer_entries(pg_server):
    history = await pg_server.client()
    await create(history, "t", SMALL)
    await fill(history, "t", 4)  # 800 tokens: at the threshold
    first = await load(history, "t")
    assert first.report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED
    assert first.report.summary_use == history_pb2.SUMMARY_USE_CREATED
    assert first.report.summarizer == "extractive"
    # Down to the low-water mark (400): the summary (target 100) stands for the three older turns,
    # the newest turn (200 tokens) stays beside it as it was.
    assert first.report.summary_covers_through_entry_id == "a2"
    message, *kept = first.messages
    assert message.role == chat_pb2.CHAT_ROLE_SYSTEM
    assert message.content.startswith("Summary of earlier conversation:\n")
    assert [m.content for m in kept] == [WORDS_96, WORDS_96]
    assert first.report.tokens_after <= 150 + 200  # within 1.5x the target, and the turn kept
    stored = (await history.get_thread_summary(pb.GetThreadSummaryRequest(thread_id="t"))).summary
    assert (stored.covers_through_entry_id, stored.summarizer, stored.model) == ("a2", "extractive", "m")
    assert stored.token_count + 4 + 200 == first.report.tokens_after

    await fill(history, "t", 1, start=4)
    second = await load(history, "t")
    assert second.report.decision == history_pb2.HISTORY_DECISION_FULL
    assert second.report.summary_use == history_pb2.SUMMARY_USE_REUSED
    assert [m.content for m in second.messages[1:]] == [WORDS_96] * 4
    assert second.messages[0].content == message.content
    assert list(second.messages[:3]) == list(first.messages)  # the same bytes, a turn appended
    assert second.report.entries_loaded == 4
    # Entries are never deleted by a load.
    assert (await history.get_thread(pb.GetThreadRequest(thread_id="t"))).thread.entry_count == 10


async def test_exclude_turn_leaves_the_turn_out(pg_server):
    history = await pg_server.client()
    await create(history, "t", SMALL)
    await fill(history, "t", 2)
    response = await load(history, "t", exclude="turn-1")
    assert response.report.entries_loaded == 2
    assert response.report.tokens_after == 200


async def test_dry_run_reports_without_summarizing_or_storing(pg_server):
    history = await pg_server.client()
    await create(history, "t", SMALL)
    await fill(history, "t", 5)
    response = await load(history, "t", dry_run=True)
    assert response.report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED
    assert response.report.summary_use == history_pb2.SUMMARY_USE_NONE
    assert codes(response) == ["compression_pending"]
    assert len(response.messages) == 10
    assert not (await history.get_thread_summary(pb.GetThreadSummaryRequest(thread_id="t"))).HasField(
        "summary"
    )


async def test_tool_pairs_survive_whole(pg_server):
    history = await pg_server.client()
    await create(history, "t", SMALL)
    await turn(
        history,
        "t",
        "turn-0",
        entry("u0", "turn-0", content="read two files"),
        entry("a0", "turn-0", ASSISTANT, content="", tool_calls=[tool_call("c1"), tool_call("c2")]),
        entry("r1", "turn-0", TOOL, content="one", tool_call_id="c1"),
        entry("r2", "turn-0", TOOL, content="two", tool_call_id="c2"),
    )
    response = await load(history, "t")
    roles = [m.role for m in response.messages]
    assert roles == [
        chat_pb2.CHAT_ROLE_USER,
        chat_pb2.CHAT_ROLE_ASSISTANT,
        chat_pb2.CHAT_ROLE_TOOL,
        chat_pb2.CHAT_ROLE_TOOL,
    ]
    assert [c.id for c in response.messages[1].tool_calls] == ["c1", "c2"]
    assert [m.tool_call_id for m in response.messages[2:]] == ["c1", "c2"]


async def test_oversized_entry_is_stored_then_cut_when_compression_fails(server_factory, database_url):
    # No summarizer endpoint: compression fails, so the fallback cuts the entry to
    # 14999 x (1000 - 4 - 24) // 3000 = 4859 characters.
    server = await server_factory(database_url=database_url, summarizer="openai", summarizer_base_url="")
    history = await server.client()
    await create(history, "t", SMALL)
    huge = " ".join(["word"] * 3000)
    await turn(history, "t", "turn-0", entry("big", "turn-0", content=huge))
    response = await load(history, "t")
    assert response.report.decision == history_pb2.HISTORY_DECISION_TRUNCATED
    assert response.report.summary_use == history_pb2.SUMMARY_USE_FAILED
    assert codes(response) == ["summarizer_failed", "entry_truncated"]
    assert response.report.diagnostics[0].message == "openai: summarizer_base_url is not set"
    assert response.report.diagnostics[1].entry_id == "big"
    [message] = response.messages
    assert message.content.endswith("[cut to fit the history budget: 4859 of 14999 characters kept]")
    assert response.report.tokens_after <= 1000
    stored = await history.append_entries(
        pb.AppendEntriesRequest(thread_id="t", entries=[entry("big", "turn-0", content=huge)])
    )
    assert stored.existing_count == 1
    assert stored.entries[0].token_count == 3000


async def test_load_errors(pg_server):
    history = await pg_server.client()
    error = await failure(load(history, "missing"))
    assert error.code == grpc.StatusCode.NOT_FOUND
    error = await failure(load(history, ""))
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert error.violations == [("thread_id", "thread id is required")]
