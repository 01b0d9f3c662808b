"""OpenAI Responses: its conversation rules and its SDK's request types, which every body
rendered for it must pass (`strict`, `check_types`).

The request types are the openai SDK's ResponseCreateParamsNonStreaming, every TypedDict of
openai.types given `extra="forbid"`.

Conversation rules (`strict`, `/v1/responses`), in their strictest reading:
  OR1 model and a non-empty input list of messages, function_call and function_call_output items
  OR2 message roles user, system, developer, assistant with non-empty text or parts
  OR3 function_call: call_id, name of the pattern, arguments a JSON object text; call ids unique
  OR4 each function_call has its function_call_output after it and before the next user or assistant message
  OR5 each function_call_output answers an earlier function_call, once; its output is text or a list of
      input_text, input_image and input_file parts
  OR6 tools: type function, name of the pattern, object parameters, `strict` given; choice and parallel only
      with tools
  OR7 only documented top-level keys
"""

from __future__ import annotations

from typing import Any

from tests.providers.conformance import Body
from tests.providers.sdk_types import request_types
from tests.providers.strict import OPENAI_NAME, Check, json_object_text, openai_parts_ok

RESPONSES_KEYS = {
    "model",
    "input",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning",
    "temperature",
    "max_output_tokens",
    "prompt_cache_key",
}


def _responses_tools(body: dict[str, Any], check: Check) -> None:
    names: set[str] = set()
    tools = body.get("tools", [])
    for i, tool in enumerate(tools):
        name = tool.get("name", "")
        check(
            tool.get("type") == "function" and "strict" in tool, "OR6", f"tools[{i}]", "function with strict"
        )
        check(OPENAI_NAME.fullmatch(name) and name not in names, "OR6", f"tools[{i}].name", f"bad {name!r}")
        check(tool.get("parameters", {}).get("type") == "object", "OR6", f"tools[{i}]", "object parameters")
        names.add(name)
    choice = body.get("tool_choice")
    if choice is not None or "parallel_tool_calls" in body:
        check(tools, "OR6", "tool_choice/parallel_tool_calls", "only with tools")
    if isinstance(choice, dict):
        check(choice.get("name") in names, "OR6", "tool_choice", "names no declared tool")


def strict(body: dict[str, Any]) -> None:
    check = Check()
    check(set(body) <= RESPONSES_KEYS, "OR7", "body", f"unknown keys {sorted(set(body) - RESPONSES_KEYS)}")
    items = body.get("input") or []
    check(body.get("model") and items, "OR1", "body", "model and input are required")
    _responses_tools(body, check)
    calls: set[str] = set()
    open_calls: set[str] = set()
    answered: set[str] = set()
    for i, item in enumerate(items):
        where, kind = f"input[{i}]", item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            check(role in ("user", "system", "developer", "assistant"), "OR2", where, f"role {role!r}")
            check(openai_parts_ok(item.get("content"), "input_text"), "OR2", where, "empty content")
            if role in ("user", "assistant"):
                check(not open_calls, "OR4", where, f"calls {sorted(open_calls)} unanswered before it")
                open_calls = set()
        elif kind == "function_call":
            call_id = item.get("call_id")
            check(call_id and call_id not in calls, "OR3", where, f"missing or duplicate call_id {call_id!r}")
            check(OPENAI_NAME.fullmatch(item.get("name", "")), "OR3", where, "bad name")
            check(json_object_text(item.get("arguments")), "OR3", where, "arguments not a JSON object")
            calls.add(call_id)
            open_calls.add(call_id)
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            check(
                call_id in open_calls and call_id not in answered,
                "OR5",
                where,
                f"answers no open call {call_id!r}",
            )
            output = item.get("output")
            check(
                isinstance(output, str) or openai_parts_ok(output, "input_text"),
                "OR5",
                where,
                "output must be text or a non-empty list of input_text, input_image, input_file",
            )
            if isinstance(output, list):
                kinds = {p.get("type") for p in output if isinstance(p, dict)}
                check(
                    kinds <= {"input_text", "input_image", "input_file"},
                    "OR5",
                    where,
                    f"output parts {kinds}",
                )
            open_calls.discard(call_id)
            answered.add(call_id)
        else:
            check(False, "OR1", where, f"unknown item type {kind!r}")
    check(not open_calls, "OR4", "input", f"calls {sorted(open_calls)} never answered")
    check.done()


def _request_params() -> Any:
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

    return ResponseCreateParamsNonStreaming


check_types = request_types(_request_params, ("openai.types",))


# Bodies written by hand that each break one rule (tests/providers/test_strict_validators.py shows
# the checker fails them on that rule).

USER = {"role": "user", "content": "hi"}


BROKEN: tuple[tuple[str, Body], ...] = (
    (
        "OR4",
        {
            "model": "m",
            "input": [USER, {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}],
        },
    ),
    ("OR5", {"model": "m", "input": [USER, {"type": "function_call_output", "call_id": "c1", "output": ""}]}),
)
