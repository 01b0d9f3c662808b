"""The peer of bench_cache.py: the same agent loop kept by LangChain 1.x's SummarizationMiddleware.

The loop's turns (bench_cache.turn_entries) go through the middleware as an agent built with it
would run them: before each model call it summarizes when the messages reach its trigger (the
thread's threshold here, counted exactly in the model's tokenizer), keeping the newest 20 messages
(its default) after one summary message. The summary model is a fake that answers a summary of the
same size ours aims for (10% of the budget). Each model call's messages, after the loop's system
prompt (LangChain sends one system message: the compiled prompt whole, runtime facts included), are
rendered as the OpenAI Chat Completions body our renderer writes for them (no prompt_cache_key:
LangChain sets none) and handed to the same OpenAI caching rules (cache_model.py).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from bench_cache import RESERVE, Loop, PathResult, compile_input, tools, turn_entries
from cache_model import model_for
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from pioneer_grpc.compiler.compile import compile_prompt
from pioneer_grpc.compiler.seed import ensure_bootstrap_files
from pioneer_grpc.history.tokens import count_blocking
from pioneer_grpc.providers import render
from pioneer_grpc.v1 import chat_pb2, common_pb2, history_pb2, provider_service_pb2

PATH = "openai-chat"
MODEL = "gpt-5"
TOKENIZER = "o200k_base"


def _counter() -> Any:
    memo: dict[str, int] = {}

    def count(messages: Any) -> int:
        total = 0
        for message in messages:
            text = message.content if isinstance(message.content, str) else json.dumps(message.content)
            if isinstance(message, AIMessage) and message.tool_calls:
                text += json.dumps(message.tool_calls)
            if text not in memo:
                [memo[text]] = count_blocking([text], TOKENIZER)
            total += memo[text] + 4
        return total

    return count


def _lc(entry: history_pb2.ConversationEntry) -> BaseMessage:
    if entry.role == history_pb2.ENTRY_ROLE_USER:
        return HumanMessage(content=entry.content)
    if entry.role == history_pb2.ENTRY_ROLE_TOOL:
        return ToolMessage(content=entry.content, tool_call_id=entry.tool_call_id, name=entry.name)
    calls = [{"id": c.id, "name": c.name, "args": json.loads(c.arguments)} for c in entry.tool_calls]
    return AIMessage(content=entry.content, tool_calls=calls)


def _chat(message: BaseMessage) -> chat_pb2.ChatMessage:
    if isinstance(message, HumanMessage):
        return chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content=str(message.content))
    if isinstance(message, ToolMessage):
        return chat_pb2.ChatMessage(
            role=chat_pb2.CHAT_ROLE_TOOL, content=str(message.content), tool_call_id=message.tool_call_id
        )
    assert isinstance(message, AIMessage)
    calls = [
        common_pb2.ToolCall(id=c["id"], name=c["name"], arguments=json.dumps(c["args"]))
        for c in message.tool_calls
    ]
    return chat_pb2.ChatMessage(
        role=chat_pb2.CHAT_ROLE_ASSISTANT, content=str(message.content), tool_calls=calls
    )


def run_peer(loop: Loop, turns: int) -> PathResult:
    budget = loop.window - RESERVE
    threshold = budget * 80 // 100
    summary = " ".join(["note"] * (budget // 10))
    middleware = SummarizationMiddleware(
        model=FakeListChatModel(responses=[summary] * 10_000),
        trigger=("tokens", threshold),
        keep=("messages", 20),
        token_counter=_counter(),
    )
    model = model_for(PATH)
    result = PathResult(loop.name, "langchain-peer", MODEL)
    definitions = tools()
    counter = _counter()
    started = False
    with tempfile.TemporaryDirectory(prefix="pioneer-peer-") as home:
        ensure_bootstrap_files(Path(home))
        messages: list[BaseMessage] = []
        for i in range(turns):
            user, step, answer = turn_entries(loop, i)
            for number, entries in enumerate(([user], step)):
                messages += [_lc(entry) for entry in entries]
                update = middleware.before_model({"messages": messages}, None)  # type: ignore[arg-type]
                if update:
                    messages = list(update["messages"][1:])  # after RemoveMessage(REMOVE_ALL_MESSAGES)
                    started = True
                payload = compile_prompt(compile_input(loop, 2 * i + number), [Path(home)])
                system = payload.stable_system_text + "\n\n" + payload.dynamic_system_text
                request = chat_pb2.ChatRequest(
                    model=MODEL,
                    messages=[chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_SYSTEM, content=system)]
                    + [_chat(m) for m in messages],
                    tools=definitions,
                )
                body = json.loads(
                    render(provider_service_pb2.PROVIDER_OPENAI_CHAT_COMPLETIONS, request).body_json
                )
                result.rounds.append(model.observe(body))
                result.kept.append((counter(messages), threshold, started))
            messages.append(_lc(answer))
    return result
