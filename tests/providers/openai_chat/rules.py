"""OpenAI Chat Completions: its conversation rules and its SDK's request types, which every body
rendered for it must pass (`strict`, `check_types`).

The request types are the openai SDK's CompletionCreateParamsNonStreaming, every TypedDict of
openai.types given `extra="forbid"`.

Conversation rules (`strict`, `/v1/chat/completions`), in their strictest reading:
  OC1 model and a non-empty messages list; roles system, developer, user, assistant, tool
  OC2 system, developer and user content: non-empty text, or a non-empty list of parts
  OC3 assistant content may be absent only with tool_calls
  OC4 tool_calls: id, type "function", function.name ^[a-zA-Z0-9_-]{1,64}$, arguments a JSON object text
  OC5 tool call ids unique in the request
  OC6 an assistant message with tool_calls is followed by one tool message per call, before any other message
  OC7 a tool message answers a call of the assistant message it follows, once
  OC8 a participant name matches ^[a-zA-Z0-9_-]{1,64}$
  OC9 tools: type function, unique names of the pattern, object parameters; at most 128
  OC10 tool_choice and parallel_tool_calls only with tools; tool_choice names a declared tool
  OC11 only documented top-level keys; prompt_cache_key at most 64 characters; temperature in [0, 2]
"""

from __future__ import annotations

from typing import Any

from tests.providers.conformance import Body
from tests.providers.sdk_types import request_types
from tests.providers.strict import OPENAI_NAME, Check, json_object_text, nonblank, openai_parts_ok

CHAT_KEYS = {
    "model",
    "messages",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning_effort",
    "temperature",
    "max_completion_tokens",
    "prompt_cache_key",
}


def _chat_tools(body: dict[str, Any], check: Check) -> set[str]:
    names: set[str] = set()
    tools = body.get("tools", [])
    check(len(tools) <= 128, "OC9", "tools", "more than 128 tools")
    for i, tool in enumerate(tools):
        function = tool.get("function", {})
        name = function.get("name", "")
        check(tool.get("type") == "function", "OC9", f"tools[{i}]", "type must be function")
        check(OPENAI_NAME.fullmatch(name), "OC9", f"tools[{i}].function.name", f"bad name {name!r}")
        check(name not in names, "OC9", f"tools[{i}].function.name", "duplicate")
        check(
            function.get("parameters", {}).get("type") == "object", "OC9", f"tools[{i}]", "object parameters"
        )
        names.add(name)
    choice = body.get("tool_choice")
    if choice is not None or "parallel_tool_calls" in body:
        check(tools, "OC10", "tool_choice/parallel_tool_calls", "only with tools")
    if isinstance(choice, dict):
        check(
            choice.get("function", {}).get("name") in names, "OC10", "tool_choice", "names no declared tool"
        )
    elif choice is not None:
        check(choice in ("none", "auto", "required"), "OC10", "tool_choice", f"unknown {choice!r}")
    return names


def strict(body: dict[str, Any]) -> None:
    check = Check()
    check(set(body) <= CHAT_KEYS, "OC11", "body", f"unknown keys {sorted(set(body) - CHAT_KEYS)}")
    check(len(body.get("prompt_cache_key", "")) <= 64, "OC11", "prompt_cache_key", "over 64 characters")
    if "temperature" in body:
        check(0 <= body["temperature"] <= 2, "OC11", "temperature", "outside [0, 2]")
    messages = body.get("messages") or []
    check(body.get("model") and messages, "OC1", "body", "model and messages are required")
    _chat_tools(body, check)
    ids: set[str] = set()
    open_calls: dict[str, str] = {}
    for i, m in enumerate(messages):
        where, role = f"messages[{i}]", m.get("role")
        check(role in ("system", "developer", "user", "assistant", "tool"), "OC1", where, f"role {role!r}")
        if "name" in m:
            check(OPENAI_NAME.fullmatch(m["name"]), "OC8", where, f"name {m['name']!r}")
        if role != "tool":
            check(not open_calls, "OC6", where, f"calls {sorted(open_calls)} unanswered before this message")
            open_calls = {}
        if role in ("system", "developer", "user"):
            check(openai_parts_ok(m.get("content"), "text"), "OC2", where, "empty content")
        elif role == "assistant":
            calls = m.get("tool_calls") or []
            check(calls or nonblank(m.get("content")), "OC3", where, "no content and no tool_calls")
            for j, c in enumerate(calls):
                cw = f"{where}.tool_calls[{j}]"
                function = c.get("function", {})
                check(c.get("id") and c.get("type") == "function", "OC4", cw, "id and type function")
                check(OPENAI_NAME.fullmatch(function.get("name", "")), "OC4", cw, "bad function name")
                check(json_object_text(function.get("arguments")), "OC4", cw, "arguments not a JSON object")
                check(c.get("id") not in ids, "OC5", cw, f"duplicate id {c.get('id')!r}")
                ids.add(c.get("id"))
                open_calls[c.get("id")] = function.get("name", "")
        elif role == "tool":
            call_id = m.get("tool_call_id")
            check(call_id in open_calls, "OC7", where, f"answers no open call ({call_id!r})")
            open_calls.pop(call_id, None)
            content = m.get("content")
            check(isinstance(content, (str, list)), "OC7", where, "content must be text or text parts")
    check(not open_calls, "OC6", "messages", f"calls {sorted(open_calls)} never answered")
    check.done()


def _request_params() -> Any:
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    return CompletionCreateParamsNonStreaming


check_types = request_types(_request_params, ("openai.types",))


# Bodies written by hand that each break one rule (tests/providers/test_strict_validators.py shows
# the checker fails them on that rule).

USER = {"role": "user", "content": "hi"}
CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def _chat(*messages: Body, **extra: Any) -> Body:
    return {"model": "m", "messages": list(messages), "tools": TOOLS, **extra}


BROKEN: tuple[tuple[str, Body], ...] = (
    ("OC6", _chat(USER, {"role": "assistant", "tool_calls": [CALL]})),
    ("OC6", _chat(USER, {"role": "assistant", "tool_calls": [CALL]}, USER)),
    ("OC7", _chat(USER, {"role": "tool", "tool_call_id": "c9", "content": "x"})),
    ("OC2", _chat({"role": "user", "content": " "})),
    ("OC8", _chat({**USER, "name": "Ana Silva"})),
    (
        "OC4",
        _chat(
            USER, {"role": "assistant", "tool_calls": [{**CALL, "function": {"name": "f", "arguments": "x"}}]}
        ),
    ),
    ("OC10", {"model": "m", "messages": [USER], "parallel_tool_calls": False}),
)
