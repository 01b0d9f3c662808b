"""Strict validators of each provider's documented conversation rules, applied to a rendered body.

Written from the providers' API references and error messages, not from the
server's code: each rule is the strictest reading of what the provider
documents (or answers 400 to). A body that breaks one raises StrictViolation
listing every rule broken, as `rule-id: where: what`.

OpenAI Chat Completions (`/v1/chat/completions`)
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
OpenAI Responses (`/v1/responses`)
  OR1 model and a non-empty input list of messages, function_call and function_call_output items
  OR2 message roles user, system, developer, assistant with non-empty text or parts
  OR3 function_call: call_id, name of the pattern, arguments a JSON object text; call ids unique
  OR4 each function_call has its function_call_output after it and before the next user or assistant message
  OR5 each function_call_output answers an earlier function_call, once; its output is text or a list of
      input_text, input_image and input_file parts
  OR6 tools: type function, name of the pattern, object parameters, `strict` given; choice and parallel only
      with tools
  OR7 only documented top-level keys
Anthropic Messages (`/v1/messages`)
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
Gemini generateContent (`/v1beta/models/{model}:generateContent`)
  GE1 a non-empty contents list; roles user and model; each content has non-empty parts; the first is user
  GE2 a part holds one of text (non-empty), inlineData, fileData, functionCall, functionResponse
  GE3 functionCall only from the model, functionResponse only from the user; a function response turn holds
      only function responses
  GE4 a function call turn comes right after a user turn or a function response turn
  GE5 a function call turn is followed by a function response turn with as many responses, matching names
      and ids
  GE6 functionCall args an object; names [A-Za-z0-9_.:-], starting with a letter or _, at most 64
  GE7 tools: functionDeclarations with unique names of that pattern
  GE8 toolConfig mode AUTO, ANY, NONE or VALIDATED; allowedFunctionNames only with ANY, declared
  GE9 only documented top-level keys; no model and no parallel switch in the body
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
ANTHROPIC_ID = re.compile(r"[a-zA-Z0-9_-]+")
ANTHROPIC_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}")
GEMINI_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}")


class StrictViolation(AssertionError):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems

    @property
    def rules(self) -> set[str]:
        return {p.split(":", 1)[0] for p in self.problems}


class _Check:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def __call__(self, ok: object, rule: str, where: str, what: str) -> bool:
        if not ok:
            self.problems.append(f"{rule}: {where}: {what}")
        return bool(ok)

    def done(self) -> None:
        if self.problems:
            raise StrictViolation(self.problems)


def _json_object_text(text: Any) -> bool:
    if not isinstance(text, str):
        return False
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _nonblank(text: Any) -> bool:
    return isinstance(text, str) and bool(text.strip())


def _openai_parts_ok(content: Any, text_type: str) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    if not isinstance(content, list) or not content:
        return False
    return all(
        isinstance(p, dict) and (p.get("type") != text_type or _nonblank(p.get("text"))) for p in content
    )


# --- OpenAI Chat Completions ---------------------------------------------------------------------

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


def _chat_tools(body: dict[str, Any], check: _Check) -> set[str]:
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


def openai_chat(body: dict[str, Any]) -> None:
    check = _Check()
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
            check(_openai_parts_ok(m.get("content"), "text"), "OC2", where, "empty content")
        elif role == "assistant":
            calls = m.get("tool_calls") or []
            check(calls or _nonblank(m.get("content")), "OC3", where, "no content and no tool_calls")
            for j, c in enumerate(calls):
                cw = f"{where}.tool_calls[{j}]"
                function = c.get("function", {})
                check(c.get("id") and c.get("type") == "function", "OC4", cw, "id and type function")
                check(OPENAI_NAME.fullmatch(function.get("name", "")), "OC4", cw, "bad function name")
                check(_json_object_text(function.get("arguments")), "OC4", cw, "arguments not a JSON object")
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


# --- OpenAI Responses ----------------------------------------------------------------------------

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


def _responses_tools(body: dict[str, Any], check: _Check) -> None:
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


def openai_responses(body: dict[str, Any]) -> None:
    check = _Check()
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
            check(_openai_parts_ok(item.get("content"), "input_text"), "OR2", where, "empty content")
            if role in ("user", "assistant"):
                check(not open_calls, "OR4", where, f"calls {sorted(open_calls)} unanswered before it")
                open_calls = set()
        elif kind == "function_call":
            call_id = item.get("call_id")
            check(call_id and call_id not in calls, "OR3", where, f"missing or duplicate call_id {call_id!r}")
            check(OPENAI_NAME.fullmatch(item.get("name", "")), "OR3", where, "bad name")
            check(_json_object_text(item.get("arguments")), "OR3", where, "arguments not a JSON object")
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
                isinstance(output, str) or _openai_parts_ok(output, "input_text"),
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


# --- Anthropic Messages --------------------------------------------------------------------------

ANTHROPIC_KEYS = {"model", "max_tokens", "system", "messages", "tools", "tool_choice", "thinking"}


def _anthropic_blocks(m: dict[str, Any], where: str, check: _Check) -> list[dict[str, Any]]:
    content = m.get("content")
    if isinstance(content, str):
        check(content.strip(), "AN2", where, "text without non-whitespace")
        return []
    if not check(isinstance(content, list) and content, "AN2", where, "empty content"):
        return []
    for k, block in enumerate(content):
        if block.get("type") == "text":
            check(_nonblank(block.get("text")), "AN2", f"{where}.content[{k}]", "text block is blank")
        if block.get("type") == "tool_result" and isinstance(block.get("content"), str):
            check(block["content"].strip(), "AN2", f"{where}.content[{k}]", "tool_result text is blank")
    return content


def _anthropic_tools(body: dict[str, Any], thinking: bool, check: _Check) -> None:
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


def anthropic(body: dict[str, Any]) -> None:
    check = _Check()
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
            all(b.get("type") == "text" and _nonblank(b.get("text")) for b in system),
            "AN7",
            "system",
            "blank",
        )
    elif system is not None:
        check(_nonblank(system), "AN7", "system", "blank")
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


# --- Gemini generateContent ----------------------------------------------------------------------

GEMINI_KEYS = {"contents", "systemInstruction", "tools", "toolConfig", "generationConfig"}
PART_KINDS = {"text", "inlineData", "fileData", "functionCall", "functionResponse"}


def _gemini_parts(content: dict[str, Any], where: str, check: _Check) -> list[str]:
    kinds: list[str] = []
    parts = content.get("parts") or []
    check(parts, "GE1", where, "no parts")
    for k, part in enumerate(parts):
        found = [key for key in part if key in PART_KINDS]
        check(len(found) == 1, "GE2", f"{where}.parts[{k}]", f"holds {found}")
        if "text" in part:
            check(_nonblank(part["text"]), "GE2", f"{where}.parts[{k}]", "empty text")
        kinds.extend(found)
    return kinds


def _gemini_tools(body: dict[str, Any], check: _Check) -> set[str]:
    names: set[str] = set()
    for tool in body.get("tools", []):
        for d in tool.get("functionDeclarations", []):
            name = d.get("name", "")
            check(GEMINI_NAME.fullmatch(name) and name not in names, "GE7", "tools", f"bad name {name!r}")
            names.add(name)
    config = body.get("toolConfig", {}).get("functionCallingConfig")
    if config is not None:
        mode = config.get("mode")
        check(mode in ("AUTO", "ANY", "NONE", "VALIDATED"), "GE8", "toolConfig", f"mode {mode!r}")
        allowed = config.get("allowedFunctionNames")
        if allowed is not None:
            check(mode == "ANY" and set(allowed) <= names, "GE8", "toolConfig", "allowedFunctionNames")
    return names


def gemini(body: dict[str, Any]) -> None:
    check = _Check()
    check(set(body) <= GEMINI_KEYS, "GE9", "body", f"unknown keys {sorted(set(body) - GEMINI_KEYS)}")
    _gemini_tools(body, check)
    for part in body.get("systemInstruction", {}).get("parts", []):
        check(_nonblank(part.get("text")), "GE2", "systemInstruction", "empty text")
    contents = body.get("contents") or []
    check(contents, "GE1", "contents", "empty")
    if contents:
        check(contents[0].get("role") == "user", "GE1", "contents[0]", "the first content must be user")
    previous: tuple[str, list[str]] = ("", [])
    pending: list[dict[str, Any]] = []
    for i, content in enumerate(contents):
        where, role = f"contents[{i}]", content.get("role")
        check(role in ("user", "model"), "GE1", where, f"role {role!r}")
        kinds = _gemini_parts(content, where, check)
        parts = content.get("parts") or []
        calls = [p["functionCall"] for p in parts if "functionCall" in p]
        responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
        check(not calls or role == "model", "GE3", where, "functionCall outside a model turn")
        check(not responses or role == "user", "GE3", where, "functionResponse outside a user turn")
        check(
            not responses or set(kinds) == {"functionResponse"}, "GE3", where, "mixed function response turn"
        )
        if calls:
            check(previous[0] == "user", "GE4", where, "function call turn not after a user or response turn")
        if pending:
            made = sorted((c.get("name", ""), c.get("id", "")) for c in pending)
            paired = made == sorted((r.get("name", ""), r.get("id", "")) for r in responses)
            check(paired, "GE5", where, "does not answer the function calls before it, one for one")
        else:
            check(not responses, "GE5", where, "function responses with no function call turn before")
        for c in calls:
            check(isinstance(c.get("args", {}), dict), "GE6", where, "args not an object")
            check(GEMINI_NAME.fullmatch(c.get("name", "")), "GE6", where, f"bad name {c.get('name')!r}")
        pending = calls
        previous = (role, kinds)
    check(not pending, "GE5", "contents", "the last function call turn is never answered")
    check.done()


STRICT: dict[int, Callable[[dict[str, Any]], None]] = {
    1: openai_chat,  # PROVIDER_OPENAI_CHAT_COMPLETIONS
    2: openai_responses,  # PROVIDER_OPENAI_RESPONSES
    3: anthropic,  # PROVIDER_ANTHROPIC_MESSAGES
    4: gemini,  # PROVIDER_GEMINI_GENERATE_CONTENT
}
