"""Stable ErrorInfo reasons and metadata on history errors, as the Python client reads them; CreateThread
retried; both backends."""

from __future__ import annotations

import grpc

from pioneer_grpc import reasons
from pioneer_grpc.v1 import history_service_pb2 as pb
from tests.history.rpc import codes, config, create, entry, failure, load, turn


async def test_create_thread_retried_with_the_same_config_answers_the_stored_thread(pg_server):
    history = await pg_server.client()
    first = await create(history, "t", config(64_000, 8_000, model="m"))
    await turn(history, "t", "u1", entry("e1", "u1"))
    again = await create(history, "t", config(64_000, 8_000, model="m"))
    assert again.thread_id == "t"
    assert again.config == first.config
    assert again.create_time == first.create_time
    assert again.entry_count == 1


async def test_create_thread_with_another_config_names_what_differs(pg_server):
    history = await pg_server.client()
    await create(history, "t", config(model="m"))
    error = await failure(create(history, "t", config(64_000, model="other")))
    assert error.code == grpc.StatusCode.ALREADY_EXISTS
    assert error.reason == reasons.THREAD_CONFLICT
    assert error.metadata == {"thread_id": "t", "differing_fields": "max_context_tokens,model"}
    assert "max_context_tokens, model" in error.message


async def test_same_entry_in_another_turn_says_the_turn_differs_not_the_content(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    await turn(history, "t", "u1", entry("e1", "u1", content="hi"))
    error = await failure(
        history.append_entries(
            pb.AppendEntriesRequest(thread_id="t", entries=[entry("e1", "u2", content="hi")])
        )
    )
    assert error.code == grpc.StatusCode.ALREADY_EXISTS
    assert error.reason == reasons.ENTRY_CONFLICT
    assert "content" not in error.message
    assert "turn_id (stored in turn 'u1', sent with turn 'u2')" in error.message
    assert error.metadata == {
        "thread_id": "t",
        "entry_id": "e1",
        "differing_fields": "turn_id",
        "stored_turn_id": "u1",
    }
    changed = await failure(
        history.append_entries(
            pb.AppendEntriesRequest(thread_id="t", entries=[entry("e1", "u1", content="ho")])
        )
    )
    assert changed.reason == reasons.ENTRY_CONFLICT
    assert changed.metadata["differing_fields"] == "content"


async def test_appending_to_a_completed_turn_is_turn_completed(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    await turn(history, "t", "u1", entry("e1", "u1"))
    error = await failure(
        history.append_entries(pb.AppendEntriesRequest(thread_id="t", entries=[entry("e2", "u1")]))
    )
    assert error.code == grpc.StatusCode.FAILED_PRECONDITION
    assert error.reason == reasons.TURN_COMPLETED
    assert error.metadata == {"thread_id": "t", "turn_id": "u1", "entry_id": "e2"}


async def test_missing_thread_and_turn_have_their_own_reasons(pg_server):
    history = await pg_server.client()
    missing = await failure(history.get_thread(pb.GetThreadRequest(thread_id="nope")))
    assert (missing.code, missing.reason) == (grpc.StatusCode.NOT_FOUND, reasons.THREAD_NOT_FOUND)
    assert missing.metadata == {"thread_id": "nope"}
    await create(history, "t")
    no_turn = await failure(history.complete_turn(pb.CompleteTurnRequest(thread_id="t", turn_id="u9")))
    assert (no_turn.code, no_turn.reason) == (grpc.StatusCode.NOT_FOUND, reasons.TURN_NOT_FOUND)
    invalid = await failure(history.get_thread(pb.GetThreadRequest(thread_id="")))
    assert (invalid.reason, invalid.violations[0][0]) == (reasons.INVALID_ARGUMENT, "thread_id")


async def test_a_load_says_it_left_out_the_entries_of_incomplete_turns(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    await turn(history, "t", "u1", entry("e1", "u1"))
    await history.append_entries(
        pb.AppendEntriesRequest(
            thread_id="t", entries=[entry("e2", "u2"), entry("e3", "u2"), entry("e4", "u3")]
        )
    )
    loaded = await load(history, "t")
    assert [m.content for m in loaded.messages] == ["text of e1"]
    left_out = [d for d in loaded.report.diagnostics if d.code == "incomplete_turns_left_out"]
    assert [d.message for d in left_out] == [
        "3 entries of 2 turns not completed are left out; CompleteTurn a turn to include it in history"
    ]
    # The turn in progress is left out on purpose: only the other one is reported.
    excluding = await load(history, "t", exclude="u2")
    assert [d.message for d in excluding.report.diagnostics if d.code == "incomplete_turns_left_out"] == [
        "1 entry of 1 turn not completed is left out; CompleteTurn a turn to include it in history"
    ]
    await history.complete_turn(pb.CompleteTurnRequest(thread_id="t", turn_id="u2"))
    await history.complete_turn(pb.CompleteTurnRequest(thread_id="t", turn_id="u3"))
    assert "incomplete_turns_left_out" not in codes(await load(history, "t"))
