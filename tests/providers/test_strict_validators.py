"""The strict validators can fail: each rule on a body that breaks it, written by hand."""

from __future__ import annotations

from typing import Any

import pytest

from tests.providers.strict import STRICT, StrictViolation

CHAT, RESPONSES, ANTHROPIC, GEMINI = 1, 2, 3, 4
USER = {"role": "user", "content": "hi"}
CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
A_TOOLS = [{"name": "f", "input_schema": {"type": "object"}}]
USE = {"type": "tool_use", "id": "c1", "name": "f", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "c1"}
G_CALL = {"functionCall": {"id": "c1", "name": "f", "args": {}}}
G_RESPONSE = {"functionResponse": {"id": "c1", "name": "f", "response": {"output": ""}}}
G_USER = {"role": "user", "parts": [{"text": "hi"}]}


def chat(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": list(messages), "tools": TOOLS, **extra}


def anthropic(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 4096, "messages": list(messages), "tools": A_TOOLS, **extra}


def gemini(*contents: dict[str, Any]) -> dict[str, Any]:
    return {"contents": list(contents)}


CASES: list[tuple[int, dict[str, Any], str]] = [
    (CHAT, chat(USER, {"role": "assistant", "tool_calls": [CALL]}), "OC6"),
    (CHAT, chat(USER, {"role": "assistant", "tool_calls": [CALL]}, USER), "OC6"),
    (CHAT, chat(USER, {"role": "tool", "tool_call_id": "c9", "content": "x"}), "OC7"),
    (CHAT, chat({"role": "user", "content": " "}), "OC2"),
    (CHAT, chat({**USER, "name": "Ana Silva"}), "OC8"),
    (
        CHAT,
        chat(
            USER, {"role": "assistant", "tool_calls": [{**CALL, "function": {"name": "f", "arguments": "x"}}]}
        ),
        "OC4",
    ),
    (CHAT, {"model": "m", "messages": [USER], "parallel_tool_calls": False}, "OC10"),
    (
        RESPONSES,
        {
            "model": "m",
            "input": [USER, {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}],
        },
        "OR4",
    ),
    (
        RESPONSES,
        {"model": "m", "input": [USER, {"type": "function_call_output", "call_id": "c1", "output": ""}]},
        "OR5",
    ),
    (ANTHROPIC, anthropic({"role": "assistant", "content": "hello"}, USER), "AN1"),
    (ANTHROPIC, anthropic(USER, {"role": "assistant", "content": [USE]}, USER), "AN4"),
    (
        ANTHROPIC,
        anthropic(
            USER,
            {"role": "assistant", "content": [USE]},
            {"role": "user", "content": [{"type": "text", "text": "x"}, RESULT]},
        ),
        "AN5",
    ),
    (ANTHROPIC, anthropic({"role": "user", "content": [{"type": "text", "text": "  "}]}), "AN2"),
    (
        ANTHROPIC,
        anthropic(
            USER,
            {"role": "assistant", "content": [{**USE, "id": "c.1"}]},
            {"role": "user", "content": [{**RESULT, "tool_use_id": "c.1"}]},
        ),
        "AN3",
    ),
    (
        ANTHROPIC,
        {
            "model": "m",
            "max_tokens": 9,
            "messages": [
                USER,
                {"role": "assistant", "content": [USE]},
                {"role": "user", "content": [RESULT]},
            ],
        },
        "AN6",
    ),
    (
        ANTHROPIC,
        anthropic(USER, tool_choice={"type": "any"}, thinking={"type": "enabled", "budget_tokens": 1024}),
        "AN9",
    ),
    (
        ANTHROPIC,
        anthropic(
            USER,
            {"role": "assistant", "content": [USE]},
            {"role": "user", "content": [RESULT]},
            thinking={"type": "enabled", "budget_tokens": 1024},
        ),
        "AN10",
    ),
    (ANTHROPIC, anthropic(USER, {"role": "assistant", "content": "Sure "}), "AN11"),
    (
        GEMINI,
        gemini(
            G_USER,
            {"role": "model", "parts": [{"text": "hm"}]},
            {"role": "model", "parts": [G_CALL]},
            {"role": "user", "parts": [G_RESPONSE]},
        ),
        "GE4",
    ),
    (GEMINI, gemini(G_USER, {"role": "model", "parts": [G_CALL]}, G_USER), "GE5"),
    (
        GEMINI,
        gemini(
            G_USER,
            {"role": "model", "parts": [G_CALL]},
            {"role": "user", "parts": [G_RESPONSE, {"text": "and"}]},
        ),
        "GE3",
    ),
    (GEMINI, gemini({"role": "user", "parts": []}), "GE1"),
    (
        GEMINI,
        gemini(
            G_USER,
            {"role": "model", "parts": [{"functionCall": {"name": "1f", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "1f", "response": {}}}]},
        ),
        "GE6",
    ),
    (GEMINI, {**gemini(G_USER), "parallelToolCalls": False}, "GE9"),
]


@pytest.mark.parametrize(("provider", "body", "rule"), CASES, ids=[rule for _, _, rule in CASES])
def test_a_body_breaking_a_rule_fails_that_rule(provider: int, body: dict[str, Any], rule: str) -> None:
    with pytest.raises(StrictViolation) as info:
        STRICT[provider](body)
    assert rule in info.value.rules, info.value.problems
