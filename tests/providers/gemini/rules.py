"""Gemini generateContent: its conversation rules and its SDK's request types, which every body
rendered for it must pass (`strict`, `check_types`).

The request types are the google-genai pydantic models (which forbid unknown keys themselves) over
the contents and the config, read from JSON as the SDK reads them.

Conversation rules (`strict`, `/v1beta/models/{model}:generateContent`), in their strictest reading:
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
from typing import Any

from tests.providers.conformance import Body
from tests.providers.strict import Check, nonblank

GEMINI_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}")

GEMINI_KEYS = {"contents", "systemInstruction", "tools", "toolConfig", "generationConfig"}
PART_KINDS = {"text", "inlineData", "fileData", "functionCall", "functionResponse"}


def _gemini_parts(content: dict[str, Any], where: str, check: Check) -> list[str]:
    kinds: list[str] = []
    parts = content.get("parts") or []
    check(parts, "GE1", where, "no parts")
    for k, part in enumerate(parts):
        found = [key for key in part if key in PART_KINDS]
        check(len(found) == 1, "GE2", f"{where}.parts[{k}]", f"holds {found}")
        if "text" in part:
            check(nonblank(part["text"]), "GE2", f"{where}.parts[{k}]", "empty text")
        kinds.extend(found)
    return kinds


def _gemini_tools(body: dict[str, Any], check: Check) -> set[str]:
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


def strict(body: dict[str, Any]) -> None:
    check = Check()
    check(set(body) <= GEMINI_KEYS, "GE9", "body", f"unknown keys {sorted(set(body) - GEMINI_KEYS)}")
    _gemini_tools(body, check)
    for part in body.get("systemInstruction", {}).get("parts", []):
        check(nonblank(part.get("text")), "GE2", "systemInstruction", "empty text")
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


def check_types(body: Body, model: str) -> None:
    """Raises (a pydantic ValidationError) when the SDK's request types refuse the body."""
    from google.genai import types

    for content in body["contents"]:
        types.Content.model_validate_json(json.dumps(content))
    config = {key: body[key] for key in ("systemInstruction", "tools", "toolConfig") if key in body}
    config.update(body.get("generationConfig", {}))
    types.GenerateContentConfig.model_validate_json(json.dumps(config))


# Bodies written by hand that each break one rule (tests/providers/test_strict_validators.py shows
# the checker fails them on that rule).

CALL = {"functionCall": {"id": "c1", "name": "f", "args": {}}}
RESPONSE = {"functionResponse": {"id": "c1", "name": "f", "response": {"output": ""}}}
USER = {"role": "user", "parts": [{"text": "hi"}]}


def _contents(*contents: Body) -> Body:
    return {"contents": list(contents)}


BROKEN: tuple[tuple[str, Body], ...] = (
    (
        "GE4",
        _contents(
            USER,
            {"role": "model", "parts": [{"text": "hm"}]},
            {"role": "model", "parts": [CALL]},
            {"role": "user", "parts": [RESPONSE]},
        ),
    ),
    ("GE5", _contents(USER, {"role": "model", "parts": [CALL]}, USER)),
    (
        "GE3",
        _contents(
            USER,
            {"role": "model", "parts": [CALL]},
            {"role": "user", "parts": [RESPONSE, {"text": "and"}]},
        ),
    ),
    ("GE1", _contents({"role": "user", "parts": []})),
    (
        "GE6",
        _contents(
            USER,
            {"role": "model", "parts": [{"functionCall": {"name": "1f", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "1f", "response": {}}}]},
        ),
    ),
    ("GE9", {**_contents(USER), "parallelToolCalls": False}),
)
