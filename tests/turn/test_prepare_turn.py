"""PrepareTurn end to end: one call per provider round, through the real server."""

from __future__ import annotations

import hashlib
import json

import grpc
import pytest
from google.protobuf import struct_pb2

from pioneer_grpc.client import AsyncClient, ConnectOptions, RpcFailure, user_entry
from pioneer_grpc.v1 import (
    chat_pb2,
    common_pb2,
    history_pb2,
    history_service_pb2,
    manifest_service_pb2,
    prompt_pb2,
    provider_service_pb2,
    turn_service_pb2,
)
from tests.support import decoded

MARKER = "<!-- PIONEER_PROMT_CACHE_BOUNDARY -->"


def weather_tool() -> chat_pb2.ToolDefinition:
    params = struct_pb2.Struct()
    params.update({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    return chat_pb2.ToolDefinition(name="get_weather", description="Weather for a city", parameters=params)


def compile_input(extra: str = "Date: 2026-11-29") -> prompt_pb2.PromptCompileInput:
    return prompt_pb2.PromptCompileInput(
        profile=prompt_pb2.PROMPT_PROFILE_FULL,
        include_tool_recovery_policy=True,
        extra_system=extra,
    )


class Client(AsyncClient):
    """The Python client on a test server, with the set-ups the PrepareTurn tests repeat."""

    def __init__(self, server):
        super().__init__(server.channel(), ConnectOptions(address=server.address, token=server.token or None))

    async def thread(self, thread_id: str, **config) -> None:
        config.setdefault("model", "claude-sonnet-4-5")
        await self.create_thread(thread_id=thread_id, config=history_pb2.ThreadConfig(**config))

    async def entry_count(self, thread_id: str) -> int:
        return (await self.get_thread(thread_id=thread_id)).thread.entry_count


def bad_fields(err: grpc.RpcError | RpcFailure) -> list[str]:
    return [field for field, _ in decoded(err).violations]


async def test_first_round_returns_request_manifest_and_anthropic_body(server):
    c = Client(server)
    await c.thread("t-round")
    reply = await c.prepare_turn(
        turn_service_pb2.PrepareTurnRequest(
            thread_id="t-round",
            turn_id="turn-1",
            new_entries=[user_entry("u1", "What's the weather in Oslo?")],
            compile_input=compile_input(),
            tools=[weather_tool()],
            provider=provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES,
        )
    )
    chat = reply.chat_request
    assert chat.model == "claude-sonnet-4-5"
    assert [(m.role, m.content) for m in chat.messages] == [
        (chat_pb2.CHAT_ROLE_USER, "What's the weather in Oslo?")
    ]
    assert [t.name for t in chat.tools] == ["get_weather"]
    assert chat.compiled_prompt.manifest.fingerprint_full == reply.manifest.fingerprint_full
    assert reply.history_report.decision == history_pb2.HISTORY_DECISION_FULL
    assert reply.manifest.thread_id == "t-round"
    assert reply.manifest.turn_id == "turn-1"
    assert reply.manifest_event_id > 0
    stored = await c.get_turn_manifest(
        manifest_service_pb2.GetTurnManifestRequest(thread_id="t-round", turn_id="turn-1")
    )
    assert stored.manifest.fingerprint_full == reply.manifest.fingerprint_full
    assert stored.event_id == reply.manifest_event_id
    body = json.loads(reply.provider_body_json)
    assert reply.provider_path == "/v1/messages"
    assert body["system"][0]["text"] == chat.compiled_prompt.stable_system_text
    [message] = body["messages"]
    # The user's text, then the dynamic half as a marked block ending the turn.
    assert message["content"][0]["text"] == "What's the weather in Oslo?"
    assert message["content"][1]["text"].startswith("<runtime-context>\n")
    assert chat.compiled_prompt.dynamic_system_text in message["content"][1]["text"]
    assert MARKER not in reply.provider_body_json


async def test_later_rounds_of_a_turn_carry_its_tool_call_and_result(server):
    c = Client(server)
    await c.thread("t-tools")
    base = {
        "thread_id": "t-tools",
        "turn_id": "turn-1",
        "compile_input": compile_input(),
        "tools": [weather_tool()],
    }
    await c.prepare_turn(turn_service_pb2.PrepareTurnRequest(new_entries=[user_entry("u1", "Oslo?")], **base))
    call = common_pb2.ToolCall(id="call_1", name="get_weather", arguments='{"city":"Oslo"}')
    reply = await c.prepare_turn(
        turn_service_pb2.PrepareTurnRequest(
            new_entries=[
                history_pb2.ConversationEntry(
                    entry_id="a1", role=history_pb2.ENTRY_ROLE_ASSISTANT, tool_calls=[call]
                ),
                history_pb2.ConversationEntry(
                    entry_id="r1",
                    role=history_pb2.ENTRY_ROLE_TOOL,
                    tool_call_id="call_1",
                    name="get_weather",
                    content="4 °C, rain",
                ),
            ],
            provider=provider_service_pb2.PROVIDER_OPENAI_CHAT_COMPLETIONS,
            **base,
        )
    )
    roles = [m.role for m in reply.chat_request.messages]
    assert roles == [chat_pb2.CHAT_ROLE_USER, chat_pb2.CHAT_ROLE_ASSISTANT, chat_pb2.CHAT_ROLE_TOOL]
    assert reply.chat_request.messages[1].tool_calls[0].id == "call_1"
    body = json.loads(reply.provider_body_json)
    # The stable half, the conversation, then the dynamic half (runtime facts) after it.
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool", "system"]
    assert body["messages"][-1]["content"] == reply.chat_request.compiled_prompt.dynamic_system_text
    # Every round of the thread gets the same key, whatever its prompt.
    assert body["prompt_cache_key"] == "pioneer-" + hashlib.sha256(b"thread:t-tools").hexdigest()[:32]
    # The same turn's repeated entry ids are no-ops: three entries, not four.
    assert await c.entry_count("t-tools") == 3


async def test_next_turn_sees_the_completed_turn_as_history(server):
    c = Client(server)
    await c.thread("t-next")
    await c.prepare_turn(
        turn_service_pb2.PrepareTurnRequest(
            thread_id="t-next",
            turn_id="turn-1",
            new_entries=[user_entry("u1", "Hi")],
            compile_input=compile_input(),
        )
    )
    await c.append_entries(
        history_service_pb2.AppendEntriesRequest(
            thread_id="t-next",
            entries=[
                history_pb2.ConversationEntry(
                    entry_id="a1", turn_id="turn-1", role=history_pb2.ENTRY_ROLE_ASSISTANT, content="Hello!"
                )
            ],
        )
    )
    await c.complete_turn(history_service_pb2.CompleteTurnRequest(thread_id="t-next", turn_id="turn-1"))
    reply = await c.prepare_turn(
        turn_service_pb2.PrepareTurnRequest(
            thread_id="t-next",
            turn_id="turn-2",
            new_entries=[user_entry("u2", "Again")],
            compile_input=compile_input(),
        )
    )
    assert [m.content for m in reply.chat_request.messages] == ["Hi", "Hello!", "Again"]
    assert reply.history_report.entries_kept == 2
    assert reply.provider_body_json == ""


async def test_a_thread_over_the_threshold_is_summarized(server):
    c = Client(server)
    await c.thread("t-long", max_context_tokens=3000, response_reserve_tokens=500)
    for turn in range(30):
        await c.append_entries(
            history_service_pb2.AppendEntriesRequest(
                thread_id="t-long",
                entries=[
                    history_pb2.ConversationEntry(
                        entry_id=f"u{turn}",
                        turn_id=f"old-{turn}",
                        role=history_pb2.ENTRY_ROLE_USER,
                        content=f"Please update src/module_{turn}.py to handle the retry case number {turn}.",
                    ),
                    history_pb2.ConversationEntry(
                        entry_id=f"a{turn}",
                        turn_id=f"old-{turn}",
                        role=history_pb2.ENTRY_ROLE_ASSISTANT,
                        content=f"Done: src/module_{turn}.py now retries. " + "Details follow. " * 12,
                    ),
                ],
            )
        )
        await c.complete_turn(
            history_service_pb2.CompleteTurnRequest(thread_id="t-long", turn_id=f"old-{turn}")
        )
    reply = await c.prepare_turn(
        turn_service_pb2.PrepareTurnRequest(
            thread_id="t-long",
            turn_id="now",
            new_entries=[user_entry("u-now", "What did we change?")],
            compile_input=compile_input(),
            provider=provider_service_pb2.PROVIDER_GEMINI_GENERATE_CONTENT,
            model="gemini-2.5-pro",
        )
    )
    report = reply.history_report
    assert report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED
    assert report.summary_use == history_pb2.SUMMARY_USE_CREATED
    assert report.budget_tokens == 2500
    assert report.tokens_after <= 2500
    first, last = reply.chat_request.messages[0], reply.chat_request.messages[-1]
    assert first.role == chat_pb2.CHAT_ROLE_SYSTEM
    assert first.content.startswith("Summary of earlier conversation:\n")
    assert last.content == "What did we change?"
    assert reply.provider_path == "/v1beta/models/gemini-2.5-pro:generateContent"
    body = json.loads(reply.provider_body_json)
    assert (
        body["systemInstruction"]["parts"][0]["text"] == reply.chat_request.compiled_prompt.stable_system_text
    )


async def test_bad_compile_input_is_rejected_before_anything_is_stored(server):
    c = Client(server)
    await c.thread("t-bad")
    bad = compile_input()
    bad.dynamic_sections.add(id="has space", content="x")
    with pytest.raises(RpcFailure) as err:
        await c.prepare_turn(
            turn_service_pb2.PrepareTurnRequest(
                thread_id="t-bad", turn_id="turn-1", new_entries=[user_entry("u1", "hi")], compile_input=bad
            )
        )
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert bad_fields(err.value) == ["compile_input.dynamic_sections[0].id"]
    assert await c.entry_count("t-bad") == 0


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda r: r.tools.add(name="bad name!"), "tools[0].name"),
        (lambda r: setattr(r.tool_choice, "mode", chat_pb2.TOOL_CHOICE_MODE_REQUIRED), "tool_choice.mode"),
        (lambda r: setattr(r.new_entries[0], "turn_id", "other"), "new_entries[0].turn_id"),
    ],
)
async def test_bad_request_fields_are_named_and_nothing_is_stored(server, change, field):
    c = Client(server)
    await c.thread("t-fields")
    request = turn_service_pb2.PrepareTurnRequest(
        thread_id="t-fields",
        turn_id="turn-1",
        new_entries=[user_entry("u1", "hi")],
        compile_input=compile_input(),
    )
    change(request)
    with pytest.raises(RpcFailure) as err:
        await c.prepare_turn(request)
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert field in bad_fields(err.value)
    assert await c.entry_count("t-fields") == 0


async def test_model_is_required_somewhere(server):
    c = Client(server)
    await c.thread("t-model", model="")
    with pytest.raises(RpcFailure) as err:
        await c.prepare_turn(
            turn_service_pb2.PrepareTurnRequest(
                thread_id="t-model", turn_id="turn-1", compile_input=compile_input()
            )
        )
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert bad_fields(err.value) == ["model"]


async def test_unknown_thread_is_not_found(server):
    c = Client(server)
    with pytest.raises(RpcFailure) as err:
        await c.prepare_turn(
            turn_service_pb2.PrepareTurnRequest(
                thread_id="nope", turn_id="turn-1", compile_input=compile_input()
            )
        )
    assert err.value.code == grpc.StatusCode.NOT_FOUND


async def test_every_violation_is_reported_at_once_under_the_requests_own_names(server):
    c = Client(server)
    await c.thread("t-all")
    bad_input = compile_input()
    bad_input.dynamic_sections.add(id="has space", content="x")
    request = turn_service_pb2.PrepareTurnRequest(
        thread_id="t-all",
        turn_id="turn-1",
        new_entries=[
            user_entry("u1", "hi"),
            history_pb2.ConversationEntry(entry_id="", role=99, content="x"),
        ],
        compile_input=bad_input,
        tools=[chat_pb2.ToolDefinition(name="bad name!")],
    )
    with pytest.raises(RpcFailure) as err:
        await c.prepare_turn(request)
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert bad_fields(err.value) == [
        "new_entries[1].entry_id",
        "new_entries[1].role",
        "compile_input.dynamic_sections[0].id",
        "tools[0].name",
    ]
    assert err.value.message.endswith("(and 1 more)")
    assert await c.entry_count("t-all") == 0


async def test_one_entry_twice_in_new_entries_is_invalid_and_stores_nothing(server):
    c = Client(server)
    await c.thread("t-twice")
    request = turn_service_pb2.PrepareTurnRequest(
        thread_id="t-twice",
        turn_id="turn-1",
        new_entries=[user_entry("u1", "hi"), user_entry("u2", "and"), user_entry("u1", "hi")],
        compile_input=compile_input(),
    )
    with pytest.raises(RpcFailure) as err:
        await c.prepare_turn(request)
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert bad_fields(err.value) == ["new_entries[2].entry_id"]
    assert await c.entry_count("t-twice") == 0


async def test_history_report_says_other_incomplete_turns_are_left_out(server):
    c = Client(server)
    await c.thread("t-left-out")

    async def prepare(turn_id: str, entry_id: str) -> turn_service_pb2.PrepareTurnResponse:
        return await c.prepare_turn(
            turn_service_pb2.PrepareTurnRequest(
                thread_id="t-left-out",
                turn_id=turn_id,
                new_entries=[user_entry(entry_id, "Hi")],
                compile_input=compile_input(),
            )
        )

    first = await prepare("turn-1", "u1")
    # The turn being prepared is not "left out": it is the current one.
    assert "incomplete_turns_left_out" not in [d.code for d in first.history_report.diagnostics]
    # turn-1 is never completed: the next turn's history leaves it out and says so.
    second = await prepare("turn-2", "u2")
    assert [m.content for m in second.chat_request.messages] == ["Hi"]
    left_out = [d for d in second.history_report.diagnostics if d.code == "incomplete_turns_left_out"]
    assert len(left_out) == 1
    assert left_out[0].message.startswith("1 entry of 1 turn not completed is left out")


async def test_a_repeated_entry_id_with_other_content_is_refused_and_nothing_changes(pg_server):
    c = Client(pg_server)
    await c.thread("t")
    first = turn_service_pb2.PrepareTurnRequest(
        thread_id="t",
        turn_id="u1",
        new_entries=[user_entry("e1", "first words")],
        compile_input=compile_input(),
    )
    done = await c.prepare_turn(first)
    retried = turn_service_pb2.PrepareTurnRequest()
    retried.CopyFrom(first)
    assert (await c.prepare_turn(retried)).manifest_event_id == done.manifest_event_id
    retried.new_entries[0].content = "other words"
    retried.new_entries.append(user_entry("e2", "a new entry"))
    with pytest.raises(RpcFailure) as err:
        await c.prepare_turn(retried)
    assert err.value.code == grpc.StatusCode.ALREADY_EXISTS
    assert "e1" in err.value.message
    # The refused round stored nothing: not the new entry, not another manifest.
    assert await c.entry_count("t") == 1
    again = await c.prepare_turn(first)
    assert again.manifest_event_id == done.manifest_event_id
    users = [m.content for m in again.chat_request.messages if m.role == chat_pb2.CHAT_ROLE_USER]
    assert users == ["first words"]
