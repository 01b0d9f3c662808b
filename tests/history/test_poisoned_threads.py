"""A thread that cannot be poisoned: appends refuse what would fail every later round,
loads repair what older versions stored, and truncation keeps whole turns.

Each test named after a failure of the issue fails on the code before it: the
entry was stored, or the load sent it as it was.
"""

from __future__ import annotations

import grpc
import pytest

from pioneer_grpc.client import RpcFailure
from pioneer_grpc.history.repair import INTERRUPTED_RESULT, INTERRUPTED_RESULT_TOKENS
from pioneer_grpc.history.tokens import count_tokens
from pioneer_grpc.providers.render import render
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.service.history import content_hash
from pioneer_grpc.store import append as append_store
from pioneer_grpc.store import entries as entry_store
from pioneer_grpc.store.turns import lock_turn
from pioneer_grpc.v1 import chat_pb2, history_pb2, provider_service_pb2, turn_service_pb2
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
from tests.history.test_load_rpc import WORDS_96
from tests.support import decoded
from tests.turn.test_prepare_turn import Client, compile_input

# Every provider API the server renders for.
PROVIDERS = list(SPECS)


async def append(history, thread_id, *entries):
    return await history.append_entries(pb.AppendEntriesRequest(thread_id=thread_id, entries=entries))


async def entry_count(history, thread_id: str) -> int:
    return (await history.get_thread(pb.GetThreadRequest(thread_id=thread_id))).thread.entry_count


async def store_as_an_older_version_did(server, thread_id: str, turn_id: str, *entries) -> None:
    """Writes entries through the store alone (no append rules) and completes their turn."""
    new = [entry_store.NewEntry(e, content_hash(e), 5) for e in entries]

    store = server.ctx.store

    def write(conn) -> None:
        store.lock_thread(conn, thread_id)
        turns = {turn_id: lock_turn(conn, "default", thread_id, turn_id)}
        batch = append_store.batch_of("default", thread_id, new, "cl100k_base")
        insert = lambda *args: store.inserted(conn, *args)  # noqa: E731
        append_store.append_rows(conn, "default", thread_id, turns, batch, lambda stored: None, insert)
        store.completed_under_lock(conn, thread_id, turn_id)

    await store.runner.transact(write)


def renders_for_every_provider(messages) -> None:
    chat = chat_pb2.ChatRequest(model="m", messages=messages)
    for provider in PROVIDERS:
        render(provider, chat)


async def test_interrupted_result_token_count_is_what_a_load_charges():
    assert await count_tokens([INTERRUPTED_RESULT]) == [INTERRUPTED_RESULT_TOKENS]


async def test_one_empty_entry_cannot_block_the_thread(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    empty = history_pb2.ConversationEntry(entry_id="e2", turn_id="turn-1", role=ASSISTANT, content="  ")
    error = await failure(append(history, "t", entry("e1", "turn-1"), empty))
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert error.violations == [
        ("entries[1].content", "the entry is empty: it needs content, tool calls or artifact refs")
    ]
    assert await entry_count(history, "t") == 0
    # One an older version stored is skipped at load, with a diagnostic; the thread goes on.
    await store_as_an_older_version_did(pg_server, "t", "turn-1", entry("e1", "turn-1"), empty)
    await turn(history, "t", "turn-2", entry("e3", "turn-2"), entry("e4", "turn-2", ASSISTANT))
    response = await load(history, "t")
    assert [m.content for m in response.messages] == ["text of e1", "text of e3", "text of e4"]
    assert codes(response) == ["empty_entry_skipped"]
    assert response.report.diagnostics[0].entry_id == "e2"
    renders_for_every_provider(response.messages)


async def test_interrupted_tool_call_gets_a_synthesized_result(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    # The loop crashed while the tool ran: the call is stored, its result never was.
    await turn(
        history,
        "t",
        "turn-1",
        entry("u1", "turn-1", content="read a.py"),
        entry("a1", "turn-1", ASSISTANT, content="reading", tool_calls=[tool_call("c1", "read_file")]),
    )
    await turn(history, "t", "turn-2", entry("u2", "turn-2", content="and now?"))
    response = await load(history, "t")
    roles = [m.role for m in response.messages]
    assert roles == [
        chat_pb2.CHAT_ROLE_USER,
        chat_pb2.CHAT_ROLE_ASSISTANT,
        chat_pb2.CHAT_ROLE_TOOL,
        chat_pb2.CHAT_ROLE_USER,
    ]
    synthesized = response.messages[2]
    assert (synthesized.tool_call_id, synthesized.name, synthesized.content) == (
        "c1",
        "read_file",
        INTERRUPTED_RESULT,
    )
    assert codes(response) == ["tool_result_missing"]
    assert response.report.diagnostics[0].entry_id == "a1"
    # Synthesized results are sent, not stored: the counts speak of stored entries.
    assert (response.report.entries_loaded, response.report.entries_kept) == (3, 3)
    renders_for_every_provider(response.messages)


async def test_the_turn_in_progress_is_not_repaired_while_its_call_may_run(pg_server):
    c = Client(pg_server)
    await c.thread("t")

    async def prepare(*new_entries):
        return await c.prepare_turn(
            turn_service_pb2.PrepareTurnRequest(
                thread_id="t",
                turn_id="turn-1",
                new_entries=new_entries,
                compile_input=compile_input(),
                provider=provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES,
            )
        )

    await prepare(entry("u1", "turn-1", content="weather in Paris?"))
    call = entry(
        "a1",
        "turn-1",
        ASSISTANT,
        content="",
        tool_calls=[tool_call("c1", "get_weather", '{"city": "Paris"}')],
    )
    # The call may still be running: no synthesized result; the round cannot be sent yet.
    with pytest.raises(RpcFailure) as raised:
        await prepare(call)
    assert raised.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert "'c1'" in raised.value.message
    assert decoded(raised.value).reason == "TOOL_RESULTS_PENDING"
    # The failed round stored nothing: the call is sent again with its result.
    assert await c.entry_count("t") == 1
    reply = await prepare(
        call, entry("r1", "turn-1", TOOL, content="18 C", tool_call_id="c1", name="get_weather")
    )
    assert [m.role for m in reply.chat_request.messages][-3:] == [
        chat_pb2.CHAT_ROLE_USER,
        chat_pb2.CHAT_ROLE_ASSISTANT,
        chat_pb2.CHAT_ROLE_TOOL,
    ]
    assert reply.chat_request.messages[-1].content == "18 C"
    # A call the turn moved on from (stored by an append) was interrupted: synthesized and reported.
    await append(
        c,
        "t",
        entry("a2", "turn-1", ASSISTANT, content="", tool_calls=[tool_call("c2", "get_weather", "{}")]),
    )
    reply = await prepare(entry("a3", "turn-1", ASSISTANT, content="It is 18 C in Paris."))
    tool_messages = [m for m in reply.chat_request.messages if m.role == chat_pb2.CHAT_ROLE_TOOL]
    assert [(m.tool_call_id, m.content) for m in tool_messages] == [
        ("c1", "18 C"),
        ("c2", INTERRUPTED_RESULT),
    ]
    assert [d.code for d in reply.history_report.diagnostics] == ["tool_result_missing"]


async def test_bad_arguments_are_never_stored(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    error = await failure(
        append(
            history,
            "t",
            entry("u1", "turn-1"),
            entry("a1", "turn-1", ASSISTANT, tool_calls=[tool_call("c1", arguments="not json")]),
            entry("a2", "turn-1", ASSISTANT, tool_calls=[tool_call("c2", arguments="[1, 2]")]),
        )
    )
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert error.violations == [
        (
            "entries[1].tool_calls[0].arguments",
            "arguments must be a JSON object; not valid JSON: Expecting value at char 0",
        ),
        ("entries[2].tool_calls[0].arguments", "arguments must be a JSON object, not a JSON list"),
    ]
    assert await entry_count(history, "t") == 0
    # "" means no arguments, as every provider reads it.
    await append(history, "t", entry("a3", "turn-1", ASSISTANT, tool_calls=[tool_call("c3", arguments="")]))
    # Stored by an older version: the call and its result are skipped at load, with diagnostics.
    await store_as_an_older_version_did(
        pg_server,
        "t",
        "turn-2",
        entry("u2", "turn-2"),
        entry("a4", "turn-2", ASSISTANT, tool_calls=[tool_call("c4", arguments="not json")]),
        entry("r4", "turn-2", TOOL, content="ok", tool_call_id="c4"),
        entry("a5", "turn-2", ASSISTANT, content="done"),
    )
    response = await load(history, "t")
    assert [m.content for m in response.messages] == ["text of u2", "done"]
    # turn-1 is never completed: its entry is left out, and the load says so.
    assert codes(response) == [
        "invalid_tool_call_skipped",
        "orphan_tool_result_dropped",
        "incomplete_turns_left_out",
    ]
    renders_for_every_provider(response.messages)


async def test_tool_calls_and_results_are_checked_against_the_thread(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    await append(
        history,
        "t",
        entry("u1", "turn-1"),
        entry("a1", "turn-1", ASSISTANT, tool_calls=[tool_call("c1", "read_file"), tool_call("c2", "grep")]),
        entry("r1", "turn-1", TOOL, content="one", tool_call_id="c1", name="read_file"),
    )
    error = await failure(
        append(
            history,
            "t",
            # Repeats of stored entries are fine.
            entry(
                "a1", "turn-1", ASSISTANT, tool_calls=[tool_call("c1", "read_file"), tool_call("c2", "grep")]
            ),
            entry("r1b", "turn-1", TOOL, content="again", tool_call_id="c1", name="read_file"),
            entry("r2", "turn-1", TOOL, content="two", tool_call_id="c2", name="read_file"),
            entry("r9", "turn-1", TOOL, content="?", tool_call_id="c9"),
            entry("a2", "turn-1", ASSISTANT, tool_calls=[tool_call("c1"), tool_call("c3"), tool_call("c3")]),
        )
    )
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert error.violations == [
        ("entries[1].tool_call_id", "call 'c1' is already answered by entry 'r1'"),
        ("entries[2].name", "call 'c2' is to tool 'grep', not 'read_file'"),
        ("entries[3].tool_call_id", "no call with id 'c9' was made in this thread"),
        (
            "entries[4].tool_calls[2].id",
            "call id 'c3' is already used by tool_calls[1] of this entry: "
            "the calls open together need distinct ids",
        ),
    ]
    assert await entry_count(history, "t") == 3
    # A result after the turn moved on, or in another turn, answers no open call.
    await append(history, "t", entry("a3", "turn-1", ASSISTANT, content="moving on"))
    error = await failure(
        append(history, "t", entry("r2", "turn-1", TOOL, content="late", tool_call_id="c2"))
    )
    assert error.violations[0][0] == "entries[0].tool_call_id"
    assert "is not open" in error.violations[0][1]
    error = await failure(append(history, "t", entry("x", "turn-2", TOOL, content="late", tool_call_id="c2")))
    assert "is not open" in error.violations[0][1]
    # A call id used in another turn, or by an earlier entry of the turn, is free again: models
    # number their calls. A result answers the open call of that id.
    await append(
        history,
        "t",
        entry("a9", "turn-3", ASSISTANT, tool_calls=[tool_call("c2", "grep")]),
        entry("r9", "turn-3", TOOL, content="nine", tool_call_id="c2", name="grep"),
        entry("a10", "turn-3", ASSISTANT, tool_calls=[tool_call("c2", "grep")]),
        entry("r10", "turn-3", TOOL, content="ten", tool_call_id="c2", name="grep"),
    )
    assert await entry_count(history, "t") == 8
    error = await failure(append(history, "t", entry("r11", "turn-3", TOOL, content="?", tool_call_id="c2")))
    assert error.violations == [("entries[0].tool_call_id", "call 'c2' is already answered by entry 'r10'")]


async def test_prepare_turn_names_new_entries_fields(pg_server):
    c = Client(pg_server)
    await c.thread("t")
    request = turn_service_pb2.PrepareTurnRequest(
        thread_id="t",
        turn_id="turn-1",
        new_entries=[
            history_pb2.ConversationEntry(entry_id="u1", role=history_pb2.ENTRY_ROLE_USER),
            entry("r1", "", TOOL, content="x", tool_call_id="nope"),
        ],
        compile_input=compile_input(),
    )
    error = await failure(c.prepare_turn(request))
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [field for field, _ in error.violations] == ["new_entries[0].content"]
    del request.new_entries[0]
    error = await failure(c.prepare_turn(request))
    assert error.violations == [
        ("new_entries[0].tool_call_id", "no call with id 'nope' was made in this thread")
    ]
    assert await c.entry_count("t") == 0


async def test_stored_duplicates_and_misnamed_results_are_repaired_at_load(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    await store_as_an_older_version_did(
        pg_server,
        "t",
        "turn-1",
        entry("u1", "turn-1"),
        entry("a1", "turn-1", ASSISTANT, tool_calls=[tool_call("c1", "read_file")]),
        entry("r1", "turn-1", TOOL, content="one", tool_call_id="c1", name="grep"),
        entry("r1b", "turn-1", TOOL, content="one again", tool_call_id="c1", name="read_file"),
        entry("a2", "turn-1", ASSISTANT, tool_calls=[tool_call("c2", "grep"), tool_call("c2", "grep")]),
        entry("r2", "turn-1", TOOL, content="two", tool_call_id="c2"),
        entry("a3", "turn-1", ASSISTANT, content="done"),
    )
    response = await load(history, "t")
    assert [(m.role, m.name, m.content) for m in response.messages] == [
        (chat_pb2.CHAT_ROLE_USER, "", "text of u1"),
        (chat_pb2.CHAT_ROLE_ASSISTANT, "", "text of a1"),
        (chat_pb2.CHAT_ROLE_TOOL, "read_file", "one"),
        (chat_pb2.CHAT_ROLE_ASSISTANT, "", "done"),
    ]
    assert codes(response) == [
        "tool_result_name_repaired",
        "duplicate_tool_result_skipped",
        "duplicate_tool_call_skipped",
        "orphan_tool_result_dropped",
    ]
    renders_for_every_provider(response.messages)


async def test_truncation_never_cuts_inside_a_turn(server_factory, database_url):
    # Compression fails (no summary endpoint): the fallback keeps the newest whole turns.
    server = await server_factory(database_url=database_url, summarizer="openai", summarizer_base_url="")
    history = await server.client()
    await create(history, "t", config(2_000, 1_000, model="m"))  # budget 1,000
    for i in range(3):
        # 400 tokens a turn: question, a call with its result, the answer.
        await turn(
            history,
            "t",
            f"turn-{i}",
            entry(f"u{i}", f"turn-{i}", content=WORDS_96),
            entry(
                f"a{i}",
                f"turn-{i}",
                ASSISTANT,
                content=WORDS_96,
                tool_calls=[tool_call(f"c{i}", arguments="")],
            ),
            entry(f"r{i}", f"turn-{i}", TOOL, content=WORDS_96, tool_call_id=f"c{i}"),
            entry(f"f{i}", f"turn-{i}", ASSISTANT, content=WORDS_96),
        )
    response = await load(history, "t")
    assert response.report.decision == history_pb2.HISTORY_DECISION_TRUNCATED
    # Two whole turns fit; the old walk went on into the oldest turn and started on its answer f0.
    assert [m.role for m in response.messages] == [
        chat_pb2.CHAT_ROLE_USER,
        chat_pb2.CHAT_ROLE_ASSISTANT,
        chat_pb2.CHAT_ROLE_TOOL,
        chat_pb2.CHAT_ROLE_ASSISTANT,
    ] * 2
    assert (response.report.entries_kept, response.report.entries_dropped) == (8, 4)
    assert codes(response) == ["summarizer_failed"]


async def test_the_load_cap_counts_turns_not_messages(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    # 120 tool-heavy turns of 5 entries: 600 entries, far under the 112,000-token budget.
    for i in range(120):
        await turn(
            history,
            "t",
            f"turn-{i}",
            entry(f"u{i}", f"turn-{i}"),
            entry(f"a{i}", f"turn-{i}", ASSISTANT, tool_calls=[tool_call(f"c{i}a"), tool_call(f"c{i}b")]),
            entry(f"r{i}a", f"turn-{i}", TOOL, tool_call_id=f"c{i}a"),
            entry(f"r{i}b", f"turn-{i}", TOOL, tool_call_id=f"c{i}b"),
            entry(f"f{i}", f"turn-{i}", ASSISTANT),
        )
    response = await load(history, "t")
    assert response.report.decision == history_pb2.HISTORY_DECISION_FULL
    assert response.report.entries_loaded == 600
    assert response.messages[0].content == "text of u0"
    assert codes(response) == []
    # Past 200 turns the oldest are not read, and the report says so; the cap compacts the history
    # as the threshold would: a summary of the older turns read, the newest 100 turns kept.
    for i in range(120, 205):
        await turn(
            history, "t", f"turn-{i}", entry(f"u{i}", f"turn-{i}"), entry(f"f{i}", f"turn-{i}", ASSISTANT)
        )
    response = await load(history, "t")
    assert codes(response) == ["turn_limit_reached", "turn_cap_compacted"]
    assert response.report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED
    assert response.messages[0].content.startswith("Summary of earlier conversation:")
    assert response.messages[1].content == "text of u105"
    again = await load(history, "t")
    assert again.report.decision == history_pb2.HISTORY_DECISION_FULL
    assert list(again.messages) == list(response.messages)
