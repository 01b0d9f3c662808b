"""Anthropic Messages: its conversation rules and its SDK's request types, which every body
rendered for it must pass (`strict`, `check_types`).

The request types are the anthropic SDK's MessageCreateParamsNonStreaming, every TypedDict of
anthropic.types given `extra="forbid"`.

Conversation rules (`strict`, `/v1/messages`), in their strictest reading:
  AN1 model, max_tokens >= 1, a non-empty messages list of user and assistant messages; the first is user
  AN2 content: non-whitespace text, or a non-empty list of blocks; text blocks contain non-whitespace text
  AN3 tool_use only from the assistant: id ^[a-zA-Z0-9_-]+$, unique; name of the pattern; input an object
  AN4 every tool_use is answered by a tool_result in the next message, which is a user message
  AN5 tool_result only in user messages, first in their content, answering a tool_use of the message
      before, once
  AN6 tool_use or tool_result blocks need tool definitions
  AN7 system: text or text blocks with non-empty text
  AN8 tools: unique names ^[a-zA-Z0-9_-]{1,128}$, input_schema of type object; at most 4 cache_control blocks
  AN9 tool_choice auto, any, tool (declared) or none; with thinking only auto or none
  AN10 thinking: budget_tokens >= 1024 and below max_tokens; with thinking on, no assistant turn in progress
       (a final assistant message must start with a thinking block, which a rendered history cannot carry)
  AN11 a final assistant message does not end in whitespace
  AN12 only documented top-level keys
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.providers.conformance import Body
from tests.providers.sdk_types import request_types
from tests.providers.strict import Check, nonblank

ANTHROPIC_ID = re.compile(r"[a-zA-Z0-9_-]+")
ANTHROPIC_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}")

ANTHROPIC_KEYS = {"model", "max_tokens", "system", "messages", "tools", "tool_choice", "thinking"}


def _anthropic_blocks(m: dict[str, Any], where: str, check: Check) -> list[dict[str, Any]]:
    content = m.get("content")
    if isinstance(content, str):
        check(content.strip(), "AN2", where, "text without non-whitespace")
        return []
    if not check(isinstance(content, list) and content, "AN2", where, "empty content"):
        return []
    for k, block in enumerate(content):
        if block.get("type") == "text":
            check(nonblank(block.get("text")), "AN2", f"{where}.content[{k}]", "text block is blank")
        if block.get("type") == "tool_result" and isinstance(block.get("content"), str):
            check(block["content"].strip(), "AN2", f"{where}.content[{k}]", "tool_result text is blank")
    return content


def _anthropic_tools(body: dict[str, Any], thinking: bool, check: Check) -> None:
    names: set[str] = set()
    for i, tool in enumerate(body.get("tools", [])):
        name = tool.get("name", "")
        check(
            ANTHROPIC_NAME.fullmatch(name) and name not in names, "AN8", f"tools[{i}].name", f"bad {name!r}"
        )
        check(
            tool.get("input_schema", {}).get("type") == "object", "AN8", f"tools[{i}]", "object input_schema"
        )
        names.add(name)
    choice = body.get("tool_choice")
    if choice is not None:
        kind = choice.get("type")
        check(kind in ("auto", "any", "tool", "none"), "AN9", "tool_choice", f"unknown {kind!r}")
        if kind == "tool":
            check(choice.get("name") in names, "AN9", "tool_choice", "names no declared tool")
        check(not (thinking and kind in ("any", "tool")), "AN9", "tool_choice", f"{kind} with thinking")
    marks = json.dumps(body).count('"cache_control"')
    check(marks <= 4, "AN8", "body", f"{marks} cache_control blocks")


def _anthropic_turn_in_progress(messages: list[dict[str, Any]]) -> bool:
    """True when an assistant message follows the last user message that is not only tool results."""
    for m in reversed(messages):
        if m.get("role") == "assistant":
            return True
        content = m.get("content")
        if isinstance(content, str) or any(b.get("type") != "tool_result" for b in content or []):
            return False
    return False


def strict(body: dict[str, Any]) -> None:
    check = Check()
    check(set(body) <= ANTHROPIC_KEYS, "AN12", "body", f"unknown keys {sorted(set(body) - ANTHROPIC_KEYS)}")
    messages = body.get("messages") or []
    max_tokens = body.get("max_tokens", 0)
    check(body.get("model") and messages and max_tokens >= 1, "AN1", "body", "model, max_tokens, messages")
    thinking = body.get("thinking", {}).get("type") == "enabled"
    if thinking:
        budget = body["thinking"].get("budget_tokens", 0)
        check(1024 <= budget < max_tokens, "AN10", "thinking", f"budget {budget} vs max_tokens {max_tokens}")
        check(not _anthropic_turn_in_progress(messages), "AN10", "messages", "assistant turn in progress")
    system = body.get("system")
    if isinstance(system, list):
        check(
            all(b.get("type") == "text" and nonblank(b.get("text")) for b in system),
            "AN7",
            "system",
            "blank",
        )
    elif system is not None:
        check(nonblank(system), "AN7", "system", "blank")
    _anthropic_tools(body, thinking, check)
    if messages:
        check(messages[0].get("role") == "user", "AN1", "messages[0]", "the first message must be user")
    ids: set[str] = set()
    open_calls: set[str] = set()
    uses_tools = False
    for i, m in enumerate(messages):
        where, role = f"messages[{i}]", m.get("role")
        check(role in ("user", "assistant"), "AN1", where, f"role {role!r}")
        blocks = _anthropic_blocks(m, where, check)
        results = [b for b in blocks if b.get("type") == "tool_result"]
        uses = [b for b in blocks if b.get("type") == "tool_use"]
        uses_tools = uses_tools or bool(results or uses)
        answered = {b.get("tool_use_id") for b in results}
        check(
            not open_calls or open_calls <= answered,
            "AN4",
            where,
            f"{sorted(open_calls - answered)} unanswered",
        )
        for b in results:
            check(
                role == "user" and b.get("tool_use_id") in open_calls,
                "AN5",
                where,
                "tool_result answers no call",
            )
        check(blocks[: len(results)] == results, "AN5", where, "tool_result blocks must come first")
        check(len(answered) == len(results), "AN5", where, "a call answered twice")
        open_calls = set()
        for b in uses:
            check(role == "assistant", "AN3", where, "tool_use outside an assistant message")
            check(
                ANTHROPIC_ID.fullmatch(b.get("id", "")) and b.get("id") not in ids,
                "AN3",
                where,
                f"id {b.get('id')!r}",
            )
            check(ANTHROPIC_NAME.fullmatch(b.get("name", "")), "AN3", where, "bad name")
            check(isinstance(b.get("input"), dict), "AN3", where, "input not an object")
            ids.add(b.get("id"))
            open_calls.add(b.get("id"))
    check(not open_calls, "AN4", "messages", f"{sorted(open_calls)} never answered")
    check(not uses_tools or body.get("tools"), "AN6", "tools", "tool blocks without tool definitions")
    last = messages[-1] if messages else {}
    if last.get("role") == "assistant":
        content = last.get("content")
        text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content or [])
        check(text == text.rstrip(), "AN11", "messages[-1]", "final assistant text ends in whitespace")
    check.done()


def _request_params() -> Any:
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    return MessageCreateParamsNonStreaming


check_types = request_types(_request_params, ("anthropic.types",))


# Bodies written by hand that each break one rule (tests/providers/test_strict_validators.py shows
# the checker fails them on that rule).

USER = {"role": "user", "content": "hi"}
TOOLS = [{"name": "f", "input_schema": {"type": "object"}}]
USE = {"type": "tool_use", "id": "c1", "name": "f", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "c1"}


def _messages(*messages: Body, **extra: Any) -> Body:
    return {"model": "m", "max_tokens": 4096, "messages": list(messages), "tools": TOOLS, **extra}


BROKEN: tuple[tuple[str, Body], ...] = (
    ("AN1", _messages({"role": "assistant", "content": "hello"}, USER)),
    ("AN4", _messages(USER, {"role": "assistant", "content": [USE]}, USER)),
    (
        "AN5",
        _messages(
            USER,
            {"role": "assistant", "content": [USE]},
            {"role": "user", "content": [{"type": "text", "text": "x"}, RESULT]},
        ),
    ),
    ("AN2", _messages({"role": "user", "content": [{"type": "text", "text": "  "}]})),
    (
        "AN3",
        _messages(
            USER,
            {"role": "assistant", "content": [{**USE, "id": "c.1"}]},
            {"role": "user", "content": [{**RESULT, "tool_use_id": "c.1"}]},
        ),
    ),
    (
        "AN6",
        {
            "model": "m",
            "max_tokens": 9,
            "messages": [
                USER,
                {"role": "assistant", "content": [USE]},
                {"role": "user", "content": [RESULT]},
            ],
        },
    ),
    (
        "AN9",
        _messages(USER, tool_choice={"type": "any"}, thinking={"type": "enabled", "budget_tokens": 1024}),
    ),
    (
        "AN10",
        _messages(
            USER,
            {"role": "assistant", "content": [USE]},
            {"role": "user", "content": [RESULT]},
            thinking={"type": "enabled", "budget_tokens": 1024},
        ),
    ),
    ("AN11", _messages(USER, {"role": "assistant", "content": "Sure "})),
)
