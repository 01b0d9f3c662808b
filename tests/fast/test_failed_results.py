"""A failed tool result (ConversationEntry.is_error) goes from an entry to every provider's body by the
one path RenderChatRequest's messages take: ChatMessage.is_error, marked as each API says."""

from __future__ import annotations

import json

import pytest

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.service import history
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.turn import prepare_turn
from pioneer_grpc.v1 import history_pb2, prompt_pb2, provider_service_pb2, turn_service_pb2
from tests.providers.conformance import conformances
from tests.store.contract.rows import answer, call, result, user

P = provider_service_pb2
MODELS = {
    P.PROVIDER_ANTHROPIC_MESSAGES: "claude-sonnet-4-5",
    P.PROVIDER_AMAZON_BEDROCK_CONVERSE: "anthropic.claude-3-haiku-20240307-v1:0",
    P.PROVIDER_OPENAI_CHAT_COMPLETIONS: "gpt-4.1-mini",
    P.PROVIDER_OPENAI_RESPONSES: "gpt-4.1-mini",
    P.PROVIDER_GEMINI_GENERATE_CONTENT: "gemini-2.5-flash",
}


def _failed(entry_id: str, call_id: str) -> history_pb2.ConversationEntry:
    entry = result(entry_id, "", call_id)
    entry.content = "ENOENT: a.txt"
    entry.is_error = True
    return entry


def _marks(provider: int, body: dict) -> list[bool]:  # type: ignore[type-arg]
    """Per tool result of the body, in order: whether it says the tool failed."""
    if provider == P.PROVIDER_ANTHROPIC_MESSAGES:
        blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
        return [b.get("is_error", False) for b in blocks if b["type"] == "tool_result"]
    if provider == P.PROVIDER_AMAZON_BEDROCK_CONVERSE:
        blocks = [b["toolResult"] for m in body["messages"] for b in m["content"] if "toolResult" in b]
        return [b.get("status") == "error" for b in blocks]
    if provider == P.PROVIDER_OPENAI_CHAT_COMPLETIONS:
        return [m["content"].startswith("Tool error:\n") for m in body["messages"] if m["role"] == "tool"]
    if provider == P.PROVIDER_OPENAI_RESPONSES:
        outputs = [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]
        return [o.startswith("Tool error:\n") for o in outputs]
    parts = [p["functionResponse"] for c in body["contents"] for p in c["parts"] if "functionResponse" in p]
    return ["error" in f["response"] and "output" not in f["response"] for f in parts]


@pytest.mark.parametrize("provider", list(MODELS))
async def test_a_failed_result_is_marked_in_the_history_and_in_the_turn(
    ctx: ServiceContext, provider: int
) -> None:
    await history.create_thread(ctx, "t", history_pb2.ThreadConfig(model=MODELS[provider]))
    await history.complete_turn(
        ctx,
        "t",
        "s0",
        [
            user("q0", "", "Read a.txt"),
            call("c0", "", "k0"),
            _failed("r0", "k0"),
            answer("a0", "", "It is gone."),
        ],
    )
    request = turn_service_pb2.PrepareTurnRequest(
        thread_id="t",
        turn_id="u1",
        new_entries=[
            user("q1", "", "Read b.txt"),
            call("c1", "", "k1"),
            result("r1", "", "k1"),
            call("c2", "", "k2"),
            _failed("r2", "k2"),
        ],
        compile_input=prompt_pb2.PromptCompileInput(profile=prompt_pb2.PROMPT_PROFILE_FULL),
        provider=provider,  # type: ignore[arg-type]
    )
    for entry in request.new_entries:
        entry.turn_id = ""
    prepared = await prepare_turn(ctx, request)
    assert prepared.rendered is not None
    body = json.loads(prepared.rendered.body)
    assert _marks(provider, body) == [True, False, True]
    conformance = conformances()[provider]
    conformance.strict(body)
    conformance.sdk_types(body, MODELS[provider])
    in_content = [n for n in prepared.rendered.notices if n.code == "tool_error_in_content"]
    if provider in (P.PROVIDER_ANTHROPIC_MESSAGES, P.PROVIDER_AMAZON_BEDROCK_CONVERSE):
        assert in_content == []
    else:
        assert len(in_content) == 2


async def test_only_a_tool_entry_may_be_marked_failed(ctx: ServiceContext) -> None:
    await history.create_thread(ctx, "t", history_pb2.ThreadConfig(model="claude-sonnet-4-5"))
    marked = user("q0", "", "hello")
    marked.is_error = True
    with pytest.raises(InvalidArgument) as refused:
        await history.complete_turn(ctx, "t", "s0", [marked])
    assert [v.field for v in refused.value.violations] == ["entries[0].is_error"]
