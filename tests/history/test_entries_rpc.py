"""AppendEntries and CompleteTurn end to end: idempotency, atomic batches, validation, tokens."""

from __future__ import annotations

import grpc

from pioneer_grpc.history.tokens import count_tokens
from pioneer_grpc.v1 import chat_pb2, common_pb2, history_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb
from tests.history.rpc import ASSISTANT, TOOL, create, entry, failure, load, tool_call

RENDERED = (
    "hello world\n\nAvailable artifacts from this user message:\n"
    '- artifactId=a1, versionId=null, name="car.jpg", kind=image, size=2 KB.'
)


async def append(history, thread_id, *entries):
    return await history.append_entries(pb.AppendEntriesRequest(thread_id=thread_id, entries=entries))


async def test_append_counts_tokens_once_and_returns_the_stored_entries(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    ref = common_pb2.ArtifactRef(artifact_id="a1", display_name="car.jpg", kind="image", size_bytes=2048)
    response = await append(
        history,
        "t",
        entry("u1", "turn-1", content="hello world", artifact_refs=[ref]),
        entry("a1", "turn-1", ASSISTANT, content="x", tool_calls=[tool_call("c1", "read_file", '{"p": 1}')]),
        entry("r1", "turn-1", TOOL, content="done", tool_call_id="c1", name="read_file"),
    )
    assert (response.created_count, response.existing_count) == (3, 0)
    user, assistant, tool = response.entries
    # The text with its artifact block is what is counted.
    assert await count_tokens([RENDERED]) == [33]
    assert user.token_count == 33
    assert assistant.token_count == 1 + 2 + 6  # "x", "read_file", '{"p": 1}'
    assert tool.token_count == 1
    assert {e.tokenizer for e in response.entries} == {"cl100k_base"}
    assert user.sequence < assistant.sequence < tool.sequence
    assert not any(e.completed for e in response.entries)
    assert user.artifact_refs == [ref]
    assert assistant.tool_calls[0].arguments == '{"p": 1}'


async def test_repeat_is_a_no_op_and_different_content_is_already_exists(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    first = await append(history, "t", entry("e1", "turn-1", content="same"))
    again = await append(history, "t", entry("e1", "turn-1", content="same"), entry("e2", "turn-1"))
    assert (again.created_count, again.existing_count) == (1, 1)
    assert again.entries[0].sequence == first.entries[0].sequence
    error = await failure(
        append(history, "t", entry("e3", "turn-1"), entry("e1", "turn-1", content="changed"))
    )
    assert error.code == grpc.StatusCode.ALREADY_EXISTS
    assert error.message == "entry 'e1' already exists in thread 't' with different content"
    # The whole batch was rejected: e3 was not stored.
    thread = (await history.get_thread(pb.GetThreadRequest(thread_id="t"))).thread
    assert thread.entry_count == 2


async def test_bad_entries_name_each_field_and_store_nothing(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    error = await failure(
        append(
            history,
            "t",
            entry("ok", "turn-1"),
            history_pb2.ConversationEntry(entry_id="r", turn_id="turn-1", content="x"),
            entry("", "turn-1"),
            entry("tool", "turn-1", TOOL),
        )
    )
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert error.violations == [
        ("entries[1].role", "role must be user, assistant, tool or system"),
        ("entries[2].entry_id", "entry_id is required"),
        ("entries[3].tool_call_id", "a tool entry's tool_call_id is required"),
    ]
    thread = (await history.get_thread(pb.GetThreadRequest(thread_id="t"))).thread
    assert thread.entry_count == 0


async def test_append_to_an_unknown_thread_is_not_found(pg_server):
    error = await failure(append((await pg_server.client()), "ghost", entry("e1", "turn-1")))
    assert error.code == grpc.StatusCode.NOT_FOUND


async def test_complete_turn_marks_entries_and_rejects_unknown_turns(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    await append(history, "t", entry("e1", "turn-1"), entry("e2", "turn-1"), entry("e3", "turn-2"))
    assert len((await load(history, "t")).messages) == 0  # nothing completed yet
    done = await history.complete_turn(pb.CompleteTurnRequest(thread_id="t", turn_id="turn-1"))
    assert done.completed_entry_count == 2
    messages = (await load(history, "t")).messages
    assert [m.content for m in messages] == ["text of e1", "text of e2"]
    error = await failure(history.complete_turn(pb.CompleteTurnRequest(thread_id="t", turn_id="turn-9")))
    assert error.code == grpc.StatusCode.NOT_FOUND
    assert error.message == "turn 'turn-9' does not exist in thread 't'"
    error = await failure(history.complete_turn(pb.CompleteTurnRequest(thread_id="x", turn_id="turn-1")))
    assert error.code == grpc.StatusCode.NOT_FOUND


async def test_a_completed_turn_takes_no_new_entries_but_repeats_are_fine(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    await append(history, "t", entry("e1", "turn-1"))
    await history.complete_turn(pb.CompleteTurnRequest(thread_id="t", turn_id="turn-1"))
    again = await append(history, "t", entry("e1", "turn-1"))
    assert again.existing_count == 1
    assert again.entries[0].completed
    error = await failure(append(history, "t", entry("e2", "turn-1")))
    assert error.code == grpc.StatusCode.FAILED_PRECONDITION


async def test_count_tokens(pg_server):
    history = await pg_server.client()
    ref = common_pb2.ArtifactRef(artifact_id="a1", display_name="car.jpg", kind="image", size_bytes=2048)

    response = await history.count_tokens(
        pb.CountTokensRequest(
            texts=["hello world", ""],
            messages=[
                chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content="hello world", artifact_refs=[ref])
            ],
        )
    )
    # The message counts as appended (33) plus the per-message overhead (4).
    assert list(response.token_counts) == [2, 0, 37]
    assert (response.total_tokens, response.tokenizer) == (39, "cl100k_base")


async def test_a_repeated_batch_writes_nothing(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    first = await append(history, "t", entry("e1", "turn-1", content="same"), entry("e2", "turn-1"))
    before = (await history.get_thread(pb.GetThreadRequest(thread_id="t"))).thread.update_time
    again = await append(history, "t", entry("e1", "turn-1", content="same"), entry("e2", "turn-1"))
    assert (again.created_count, again.existing_count) == (0, 2)
    assert list(again.entries) == list(first.entries)
    after = (await history.get_thread(pb.GetThreadRequest(thread_id="t"))).thread.update_time
    # The thread row was not touched: a round's repeated entries take no write lock.
    assert after == before
    changed = await failure(append(history, "t", entry("e1", "turn-1", content="changed")))
    assert changed.code == grpc.StatusCode.ALREADY_EXISTS


async def test_an_entry_id_twice_in_one_batch_is_invalid_and_stores_nothing(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    await append(history, "t", entry("e0", "turn-1"))
    for second in (entry("e1", "turn-1"), entry("e1", "turn-1", content="other")):
        error = await failure(append(history, "t", entry("e1", "turn-1"), entry("e2", "turn-1"), second))
        assert error.code == grpc.StatusCode.INVALID_ARGUMENT
        assert error.violations == [
            (
                "entries[2].entry_id",
                "entry_id 'e1' is also entries[0]'s: each entry appears once in a request",
            ),
        ]
    # A stored entry sent twice in one batch is refused as well, not answered as two repeats.
    error = await failure(append(history, "t", entry("e0", "turn-1"), entry("e0", "turn-1")))
    assert error.violations == [
        ("entries[1].entry_id", "entry_id 'e0' is also entries[0]'s: each entry appears once in a request"),
    ]
    thread = (await history.get_thread(pb.GetThreadRequest(thread_id="t"))).thread
    assert thread.entry_count == 1
