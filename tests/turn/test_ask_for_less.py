"""Asking for less: the provider body without the ChatRequest, an append answered with counts only;
and answers shared between rounds stay right when the history changes, on any replica."""

from __future__ import annotations

import json

import grpc
import pytest

from pioneer_grpc.client import RpcFailure, user_entry
from pioneer_grpc.v1 import history_pb2, history_service_pb2, provider_service_pb2, turn_service_pb2
from tests.turn.test_prepare_turn import Client, bad_fields, compile_input


async def test_provider_body_only_leaves_the_chat_request_out(server):
    c = Client(server)
    await c.thread("t")
    request = turn_service_pb2.PrepareTurnRequest(
        thread_id="t",
        turn_id="u1",
        new_entries=[user_entry("e1", "hello")],
        compile_input=compile_input(),
        provider=provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES,
    )
    whole = await c.prepare_turn(request)
    request.provider_body_only = True
    less = await c.prepare_turn(request)
    assert not less.HasField("chat_request")
    assert whole.HasField("chat_request")
    assert less.provider_body_json == whole.provider_body_json
    assert "hello" in json.dumps(json.loads(less.provider_body_json)["messages"][-1])
    assert (less.manifest, less.manifest_event_id, less.history_report) == (
        whole.manifest,
        whole.manifest_event_id,
        whole.history_report,
    )


async def test_provider_body_only_needs_a_provider(server):
    c = Client(server)
    await c.thread("t")
    with pytest.raises(RpcFailure) as err:
        await c.prepare_turn(
            turn_service_pb2.PrepareTurnRequest(
                thread_id="t", turn_id="u1", new_entries=[user_entry("e1", "hi")], provider_body_only=True
            )
        )
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert bad_fields(err.value) == ["provider_body_only"]
    assert await c.entry_count("t") == 0


async def test_counts_only_append_answers_without_the_entries(pg_server):
    c = Client(pg_server)
    await c.thread("t")
    entries = [history_pb2.ConversationEntry(entry_id="e1", turn_id="u1", role=1, content="hi")]
    reply = await c.append_entries(
        history_service_pb2.AppendEntriesRequest(thread_id="t", entries=entries, counts_only=True)
    )
    assert (len(reply.entries), reply.created_count, reply.existing_count) == (0, 1, 0)
    again = await c.append_entries(
        history_service_pb2.AppendEntriesRequest(thread_id="t", entries=entries, counts_only=True)
    )
    assert (len(again.entries), again.created_count, again.existing_count) == (0, 0, 1)
    full = await c.append_entries(history_service_pb2.AppendEntriesRequest(thread_id="t", entries=entries))
    assert [e.entry_id for e in full.entries] == ["e1"]
    assert full.entries[0].token_count > 0


async def round_messages(c: Client, turn: str, text: str) -> list[str]:
    response = await c.prepare_turn(
        turn_service_pb2.PrepareTurnRequest(
            thread_id="t",
            turn_id=turn,
            new_entries=[user_entry(f"{turn}-u", text)],
            compile_input=compile_input(),
        )
    )
    return [m.content for m in response.chat_request.messages]


async def test_a_round_sees_what_another_replica_completed(postgres_url, server_factory):
    """Replicas share PostgreSQL."""
    first, second = (
        await server_factory(database_url=postgres_url),
        await server_factory(database_url=postgres_url),
    )
    a, b = Client(first), Client(second)
    await a.thread("t")
    assert await round_messages(a, "u1", "one") == ["one"]
    # u1 is completed on the other replica; the first replica's shared answer must not be reused.
    await b.complete_turn(history_service_pb2.CompleteTurnRequest(thread_id="t", turn_id="u1"))
    assert await round_messages(a, "u2", "two") == ["one", "two"]
    assert await round_messages(b, "u3", "three") == ["one", "three"]
    loaded = await a.load_conversation_history(
        history_service_pb2.LoadConversationHistoryRequest(thread_id="t", exclude_turn_id="u3")
    )
    assert [m.content for m in loaded.messages] == ["one"]


async def test_load_leaving_out_a_completed_turn_is_its_own_answer(server):
    c = Client(server)
    await c.thread("t")
    await round_messages(c, "u1", "one")
    await c.complete_turn(history_service_pb2.CompleteTurnRequest(thread_id="t", turn_id="u1"))
    await round_messages(c, "u2", "two")
    await c.complete_turn(history_service_pb2.CompleteTurnRequest(thread_id="t", turn_id="u2"))

    async def load(exclude: str) -> list[str]:
        reply = await c.load_conversation_history(
            history_service_pb2.LoadConversationHistoryRequest(thread_id="t", exclude_turn_id=exclude)
        )
        return [m.content for m in reply.messages]

    assert await load("") == ["one", "two"]
    assert await load("u1") == ["two"]
    assert await load("no-such-turn") == ["one", "two"]
    assert await load("u2") == ["one"]
    assert await round_messages(c, "u3", "three") == ["one", "two", "three"]
