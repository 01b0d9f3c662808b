"""Amazon Bedrock Converse: its conversation rules and its SDK's request types, which every body
rendered for it must pass (`strict`, `check_types`).

The request types are mypy-boto3-bedrock-runtime's TypedDicts (ConverseRequestTypeDef
with `modelId` added, as the SDK sends it in the path), validated by pydantic with
unknown keys forbidden; a blob is the base64 text the REST API takes.

Conversation rules (`strict`), from the Converse API reference and its
validation errors, in their strictest reading:
  BR1 a non-empty messages list; roles user and assistant, alternating, the first user
  BR2 each content a non-empty list of blocks holding one member each; text non-blank
  BR3 toolUse only from the assistant: toolUseId and name ^[a-zA-Z0-9_-]{1,64}$, ids unique,
      input an object
  BR4 each toolUse answered by one toolResult in the next message (a user message); a toolResult
      answers a toolUse of the message before
  BR5 toolConfig with tools when the messages hold toolUse or toolResult; unique tool names of the
      pattern; a named toolChoice names a declared tool
  BR6 at most 4 cachePoint blocks
  BR7 only documented top-level keys; no modelId in the body
  BR8 images png, jpeg, gif or webp; documents of a known format with a name of letters, digits,
      single spaces, hyphens, parentheses and square brackets; sources bytes or s3Location
  BR9 a final assistant message's text does not end in whitespace (the Claude models refuse it:
      "final assistant content cannot end with trailing whitespace")
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import typing_extensions
from pydantic import ConfigDict, TypeAdapter

from tests.providers.strict import Check

NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
DOCUMENT_NAME = re.compile(r"[A-Za-z0-9\-()\[\]]+( [A-Za-z0-9\-()\[\]]+)*")
TOP_KEYS = {"messages", "system", "inferenceConfig", "toolConfig", "additionalModelRequestFields"}


@cache
def converse_request() -> TypeAdapter[Any]:
    from mypy_boto3_bedrock_runtime import type_defs

    blob = type_defs.BlobTypeDef
    for name in dir(type_defs):
        typed = getattr(type_defs, name)
        if typing_extensions.is_typeddict(typed):
            typed.__pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[attr-defined]
            for key, annotation in list(typed.__annotations__.items()):
                if annotation == typing_extensions.NotRequired[blob]:
                    typed.__annotations__[key] = typing_extensions.NotRequired[str]
                elif annotation == blob:
                    typed.__annotations__[key] = str
    type_defs.BlobTypeDef = str  # type: ignore[misc]  # what annotations written as text resolve to
    return TypeAdapter(type_defs.ConverseRequestTypeDef)


def check_types(body: dict[str, Any], model: str) -> None:
    converse_request().validate_python({"modelId": model, **body})


def _block(block: dict[str, Any], where: str, check: Check) -> str:
    check(isinstance(block, dict) and len(block) == 1, "BR2", where, "a block holds one member")
    kind = next(iter(block), "")
    if kind == "text":
        check(str(block["text"]).strip(), "BR2", where, "blank text")
    elif kind == "image":
        check(block["image"].get("format") in ("png", "jpeg", "gif", "webp"), "BR8", where, "image format")
        check(set(block["image"]["source"]) in ({"bytes"}, {"s3Location"}), "BR8", where, "image source")
    elif kind == "document":
        name = block["document"].get("name", "")
        check(DOCUMENT_NAME.fullmatch(name), "BR8", where, f"document name {name!r}")
        check(
            set(block["document"]["source"]) in ({"bytes"}, {"s3Location"}), "BR8", where, "document source"
        )
    return kind


def strict(body: dict[str, Any]) -> None:
    check = Check()
    check(set(body) <= TOP_KEYS, "BR7", "body", f"unknown keys {sorted(set(body) - TOP_KEYS)}")
    messages = body.get("messages") or []
    check(messages, "BR1", "messages", "empty")
    check(not messages or messages[0].get("role") == "user", "BR1", "messages[0]", "the first is not user")
    seen_ids: set[str] = set()
    pending: list[str] = []
    history_tools = False
    for i, message in enumerate(messages):
        where, role = f"messages[{i}]", message.get("role")
        check(role in ("user", "assistant"), "BR1", where, f"role {role!r}")
        if i:
            check(role != messages[i - 1].get("role"), "BR1", where, "roles do not alternate")
        content = message.get("content") or []
        check(content, "BR2", where, "empty content")
        answered: list[str] = []
        uses: list[str] = []
        for j, block in enumerate(content):
            kind = _block(block, f"{where}.content[{j}]", check)
            if kind == "toolUse":
                use = block["toolUse"]
                history_tools = True
                check(role == "assistant", "BR3", where, "toolUse outside an assistant message")
                check(NAME.fullmatch(use.get("toolUseId", "")), "BR3", where, f"id {use.get('toolUseId')!r}")
                check(NAME.fullmatch(use.get("name", "")), "BR3", where, f"name {use.get('name')!r}")
                check(use.get("toolUseId") not in seen_ids, "BR3", where, "toolUseId used before")
                check(isinstance(use.get("input"), dict), "BR3", where, "input not an object")
                seen_ids.add(use.get("toolUseId", ""))
                uses.append(use.get("toolUseId", ""))
            elif kind == "toolResult":
                history_tools = True
                result = block["toolResult"]
                check(role == "user", "BR4", where, "toolResult outside a user message")
                answered.append(result.get("toolUseId", ""))
                for k, inner in enumerate(result.get("content", [])):
                    _block(inner, f"{where}.content[{j}].toolResult.content[{k}]", check)
        check(sorted(answered) == sorted(pending), "BR4", where, f"answers {answered}, open {pending}")
        pending = uses
    check(not pending, "BR4", "messages", "the last toolUse is never answered")
    last = messages[-1] if messages else {}
    if last.get("role") == "assistant":
        text = "".join(b.get("text", "") for b in last.get("content") or [] if isinstance(b, dict))
        check(text == text.rstrip(), "BR9", "messages[-1]", "final assistant text ends in whitespace")
    config = body.get("toolConfig")
    check(not history_tools or (config and config.get("tools")), "BR5", "toolConfig", "missing with tool use")
    names = [t["toolSpec"]["name"] for t in (config or {}).get("tools", []) if "toolSpec" in t]
    check(len(names) == len(set(names)) and all(NAME.fullmatch(n) for n in names), "BR5", "tools", "names")
    chosen = (config or {}).get("toolChoice", {}).get("tool", {}).get("name")
    check(chosen is None or chosen in names, "BR5", "toolChoice", f"names no tool {chosen!r}")
    points = json.dumps(body).count('"cachePoint"')
    check(points <= 4, "BR6", "body", f"{points} cachePoint blocks")
    check.done()


# Bodies written by hand that each break one rule (tests/providers/test_strict_validators.py shows
# the checker fails them on that rule).

USER = {"role": "user", "content": [{"text": "hi"}]}
USE = {"toolUse": {"toolUseId": "c1", "name": "f", "input": {}}}
RESULT = {"toolResult": {"toolUseId": "c1", "content": [{"text": "ok"}]}}
TOOLS = {"tools": [{"toolSpec": {"name": "f", "inputSchema": {"json": {"type": "object"}}}}]}

BROKEN: tuple[tuple[str, dict[str, Any]], ...] = (
    ("BR7", {"modelId": "m", "messages": [USER]}),
    ("BR1", {"messages": [{"role": "assistant", "content": [{"text": "hi"}]}]}),
    ("BR2", {"messages": [{"role": "user", "content": [{"text": " "}]}]}),
    (
        "BR3",
        {
            "messages": [
                USER,
                {
                    "role": "assistant",
                    "content": [{**USE, "toolUse": {**USE["toolUse"], "toolUseId": "c.1"}}],
                },
                {
                    "role": "user",
                    "content": [{"toolResult": {"toolUseId": "c.1", "content": [{"text": "ok"}]}}],
                },
            ],
            "toolConfig": TOOLS,
        },
    ),
    ("BR4", {"messages": [USER, {"role": "assistant", "content": [USE]}, USER], "toolConfig": TOOLS}),
    (
        "BR5",
        {"messages": [USER, {"role": "assistant", "content": [USE]}, {"role": "user", "content": [RESULT]}]},
    ),
    ("BR9", {"messages": [USER, {"role": "assistant", "content": [{"text": "Sure "}]}]}),
)
