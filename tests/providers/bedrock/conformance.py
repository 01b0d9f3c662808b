"""Amazon Bedrock Converse: its request types and conversation rules, and what the tests over every
provider use (`CONFORMANCE`, tests/providers/conformance.py).

The request types are mypy-boto3-bedrock-runtime's TypedDicts (ConverseRequestTypeDef
with `modelId` added, as the SDK sends it in the path), validated by pydantic with
unknown keys forbidden; a blob is the base64 text the REST API takes.

Conversation rules (`bedrock_strict`), from the Converse API reference and its
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

import base64
import json
import re
from functools import cache
from typing import Any

import typing_extensions
from pydantic import ConfigDict, TypeAdapter

from pioneer_grpc.v1 import provider_service_pb2
from tests.providers.conformance import Conformance, Model
from tests.providers.strict import _Check

P = provider_service_pb2
BEDROCK = P.PROVIDER_AMAZON_BEDROCK_CONVERSE
MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
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


def _block(block: dict[str, Any], where: str, check: _Check) -> str:
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


def bedrock_strict(body: dict[str, Any]) -> None:
    check = _Check()
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


def _call_ids(body: dict[str, Any]) -> list[str]:
    return [b["toolUse"]["toolUseId"] for m in body["messages"] for b in m["content"] if "toolUse" in b]


def blobs_as_bytes(body: dict[str, Any]) -> dict[str, Any]:
    """The body as botocore takes it: the base64 `bytes` of image and document sources as bytes
    (botocore sends them base64 again); tool inputs and schemas are left as they are."""

    def block(b: dict[str, Any]) -> dict[str, Any]:
        kind = next(iter(b), "")
        if kind in ("image", "document") and "bytes" in b[kind].get("source", {}):
            return {kind: {**b[kind], "source": {"bytes": base64.b64decode(b[kind]["source"]["bytes"])}}}
        if kind == "toolResult":
            return {kind: {**b[kind], "content": [block(inner) for inner in b[kind].get("content", [])]}}
        return b

    messages = [{**m, "content": [block(b) for b in m["content"]]} for m in body["messages"]]
    return {**body, "messages": messages}


@cache
def _client(base_url: str) -> Any:
    import botocore.session
    from botocore.config import Config

    return botocore.session.Session().create_client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=base_url,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"total_max_attempts": 1}),
    )


def _send(base_url: str, body: dict[str, Any], model: str) -> None:
    """botocore's `converse`, the model in the path as the SDK puts it (it reads no local profile:
    the callers point AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE at /dev/null)."""
    _client(base_url).converse(modelId=model, **blobs_as_bytes(body))


CONFORMANCE = Conformance(
    BEDROCK,
    (
        Model(MODEL, True),
        Model("anthropic.claude-3-haiku-20240307-v1:0", False),
        Model("amazon.nova-pro-v1:0", True, notice="unknown_model"),
    ),
    bedrock_strict,
    check_types,
    _call_ids,
    lambda body: "temperature" in body.get("inferenceConfig", {}),
    # Converse sends no reasoning setting (the renderer leaves it out, with a notice).
    lambda body, reasoning: False,
    # Converse has no tool choice none: declared tools can be called.
    lambda body: "toolConfig" in body,
    lambda body: bool(set(body.get("toolConfig", {}).get("toolChoice", {})) & {"any", "tool"}),
    sdk_send=_send,
    case_model=MODEL,
    stable_block=lambda body: body["system"][0],
    # Converse takes media as data or from S3, never by URL.
    refused_cases=frozenset({"images", "tool_result_media"}),
)
