"""Amazon Bedrock Converse (`POST /model/{modelId}/converse`): its spec, rules and renderer.

The model is in the path (URL-encoded: an ARN holds `:` and `/`), never in the body.
Caching (providers/cache_points.py, as for Anthropic): `system` holds the stable
half, then any system text (the dynamic half among it only when it goes before the
conversation; otherwise it is a marked text block ending the newest user turn). A
`cachePoint` block follows the last tool, the stable text and two blocks of the
conversation, each only where the prefix up to it meets the model's minimum: at
most the four checkpoints Converse allows, each a block of its own, so placing or
moving one changes no other byte.

Messages alternate between user and assistant: tool results are `toolResult`
blocks of a user message (with `status: error` for a result marked as an error,
and image and document blocks beside its text), and consecutive messages of one
role are sent as one message (a notice says so for assistant messages). Media go
as base64 `bytes` or an `s3Location` (an `s3://` uri); Converse takes no URL.

Adapted, each with a notice: reasoning asked for is not sent (Converse takes it
only through model-specific fields); `parallel_tool_calls=false` has no Converse
form; tool choice `none` neither, so its tools are not sent; trailing whitespace
is trimmed from a final assistant message.

Tools called in the history are declared when the round has none (Converse
refuses tool calls without tools declared), with a notice: the model may call
them. Refused (INVALID_ARGUMENT naming the field): tool choice `none` on a
conversation that holds tool calls, since its tools must then be declared and
Converse's toolChoice (auto, any, tool) cannot forbid calling one; a required or
named tool choice for a model the registry does not say takes one
(model_fit.takes_forced_choice): Converse forces only the models that support it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.providers import cache_points, model_fit, provider_rules
from pioneer_grpc.providers.common import (
    JSON,
    Media,
    Prepared,
    all_text,
    media_of,
    message_text,
    parse_arguments,
    prompt_halves,
    resolve_media,
    runtime_block,
    system_messages,
)
from pioneer_grpc.providers.conversation import Notice
from pioneer_grpc.providers.provider_rules import Adapted
from pioneer_grpc.providers.spec import PLAIN_NAME, ProviderSpec
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2

CACHE_POINT: JSON = {"cachePoint": {"type": "default"}}
IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/plain": "txt",
    "text/csv": "csv",
    "text/html": "html",
    "text/markdown": "md",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
}
# A document name: letters, digits, single spaces, hyphens, parentheses and square brackets.
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9\-()\[\] ]+")

REASONING_NOT_SENT = "reasoning_not_sent"
CHOICE_NONE_NOT_SENT = "tool_choice_none_unsupported"


def path_for(model: str) -> str:
    return f"/model/{quote(model, safe='')}/converse"


# --- rules -----------------------------------------------------------------------------------


def _history(adapted: Adapted) -> tuple[dict[str, None], bool]:
    called = dict.fromkeys(adapted.prefix.called if adapted.prefix is not None else ())
    called.update(provider_rules.tools_called(adapted.request.messages))
    results = (adapted.prefix is not None and adapted.prefix.has_results) or provider_rules.has_tool_results(
        adapted.request.messages
    )
    return called, results


def adapt(adapted: Adapted, origins: list[int], path: str) -> None:
    request = adapted.request
    merges(adapted, origins, path)
    if request.HasField("reasoning"):
        asked = model_fit.reasoning_asked(request.reasoning)
        request.ClearField("reasoning")
        if asked:
            why = "Converse takes reasoning settings only through model-specific fields: they were not sent"
            adapted.notices.append(Notice(REASONING_NOT_SENT, why, f"{path}.reasoning"))
    called, results = _history(adapted)
    if request.tools and request.tool_choice.mode == chat_pb2.TOOL_CHOICE_MODE_NONE:
        if called or results:
            raise InvalidArgument.field(
                f"{path}.tool_choice.mode",
                "Converse has no tool choice none, and this conversation holds tool calls, which it "
                "takes only with the tools declared, so the model could call one: use auto (and answer "
                "a call), or render the round for a provider with none",
            )
        adapted.notices.append(
            Notice(
                CHOICE_NONE_NOT_SENT,
                "Converse has no tool choice none: the tools were not sent",
                f"{path}.tool_choice.mode",
            )
        )
    elif not request.tools and (called or results):
        adapted.history_tools = list(called) or ["tool"]
        adapted.notices.append(
            Notice(
                provider_rules.TOOLS_DECLARED,
                "Converse refuses tool calls in the history without tools declared: "
                f"{', '.join(adapted.history_tools)} declared, with no tool choice (Converse has no none): "
                "the model may call them",
                f"{path}.tools",
            )
        )
    if request.tools and request.HasField("parallel_tool_calls") and not request.parallel_tool_calls:
        adapted.notices.append(
            Notice(
                provider_rules.PARALLEL_UNSUPPORTED,
                "Converse has no switch for parallel tool calls: parallel_tool_calls=false was not sent",
                f"{path}.parallel_tool_calls",
            )
        )
    # The Claude models behind Converse refuse it as Anthropic does ("final assistant content
    # cannot end with trailing whitespace"). A prefix never ends the conversation: not in `merges`.
    provider_rules.trim_final_assistant(
        adapted, origins, path, "Converse refuses a final assistant message ending in whitespace"
    )


def merges(adapted: Adapted, origins: list[int], path: str) -> None:
    provider_rules.assistant_merges(
        adapted,
        origins,
        path,
        "sent in one assistant message with the one before it (Converse alternates roles)",
    )


# --- rendering -------------------------------------------------------------------------------


def _source(m: Media, field: str) -> JSON:
    if m.data_b64:
        return {"bytes": m.data_b64}
    if m.file_id.startswith("s3://"):
        return {"s3Location": {"uri": m.file_id}}
    raise InvalidArgument.field(
        field, "Converse takes media as data or an s3:// location, not a URL or file id"
    )


def _document_name(m: Media, index: int) -> str:
    stem = m.filename.rsplit(".", 1)[0] if "." in m.filename else m.filename
    name = " ".join(_NOT_IN_NAME.sub(" ", stem).split())
    return name or f"document {index + 1}"


def _blocks(prepared: Prepared, index: int) -> list[JSON]:
    """Text, image and document blocks of a user or tool message, in order."""
    message = prepared.request.messages[index]
    text = message_text(prepared, message)
    blocks: list[JSON] = [{"text": text}] if text.strip() else []
    for j, part in enumerate(message.content_parts):
        media = media_of(part)
        if media is None:
            if part.text.strip():
                blocks.append({"text": part.text})
            continue
        field = f"{prepared.message_path(index)}.content_parts[{j}].{media[0]}"
        m = resolve_media(*media)
        if m.kind == "image":
            if m.mime_type not in IMAGE_FORMATS:
                raise InvalidArgument.field(field, f"Converse takes {', '.join(IMAGE_FORMATS)} images")
            blocks.append({"image": {"format": IMAGE_FORMATS[m.mime_type], "source": _source(m, field)}})
        elif m.kind == "file":
            if m.mime_type not in DOCUMENT_FORMATS:
                raise InvalidArgument.field(field, f"Converse takes {', '.join(DOCUMENT_FORMATS)} documents")
            document = {
                "format": DOCUMENT_FORMATS[m.mime_type],
                "name": _document_name(m, j),
                "source": _source(m, field),
            }
            blocks.append({"document": document})
        else:
            raise InvalidArgument.field(field, f"{m.kind} parts are not rendered for Converse")
    return blocks


def _append(out: list[JSON], role: str, blocks: list[JSON]) -> None:
    if out and out[-1]["role"] == role:
        out[-1]["content"].extend(blocks)
    else:
        out.append({"role": role, "content": blocks})


def rendered_messages(prepared: Prepared) -> list[JSON]:
    """The request's own messages; system ones go to `system`."""
    out: list[JSON] = []
    for index, message in enumerate(prepared.request.messages):
        role = message.role
        if role == chat_pb2.CHAT_ROLE_SYSTEM:
            continue
        if role == chat_pb2.CHAT_ROLE_USER:
            _append(out, "user", _blocks(prepared, index))
        elif role == chat_pb2.CHAT_ROLE_ASSISTANT:
            text = all_text(prepared, message)
            blocks: list[JSON] = [{"text": text}] if text.strip() else []
            for call in message.tool_calls:
                use = {"toolUseId": call.id, "name": call.name, "input": parse_arguments(call.arguments)}
                blocks.append({"toolUse": use})
            _append(out, "assistant", blocks)
        else:
            result: JSON = {"toolUseId": message.tool_call_id, "content": _blocks(prepared, index)}
            if message.is_error:
                result["status"] = "error"
            _append(out, "user", [{"toolResult": result}])
    return out


def _messages(prepared: Prepared) -> list[JSON]:
    own = rendered_messages(prepared)
    return joined(prepared.prefix.rendered, own) if prepared.prefix is not None else own


def joined(prefix: Sequence[Any], own: list[Any]) -> list[Any]:
    out = list(prefix)
    if out and own and out[-1]["role"] == own[0]["role"]:
        # The prefix ends with tool results (a user message) and the round starts with the
        # user's text: one user message. The prefix's own message is shared by rounds: copied.
        last = out.pop()
        own = [{"role": last["role"], "content": [*last["content"], *own[0]["content"]]}, *own[1:]]
    out.extend(own)
    return out


def _tool_config(prepared: Prepared, messages: list[JSON]) -> JSON | None:
    if not prepared.tools:
        return None
    mode = prepared.choice
    in_history = any("toolUse" in block or "toolResult" in block for m in messages for block in m["content"])
    if mode == chat_pb2.TOOL_CHOICE_MODE_NONE and not in_history:
        return None
    tools: list[JSON] = []
    for tool in prepared.tools:
        spec: JSON = {"name": tool.name}
        if tool.description:
            spec["description"] = tool.description
        spec["inputSchema"] = {"json": tool.schema}
        tools.append({"toolSpec": spec})
    config: JSON = {"tools": tools}
    if mode == chat_pb2.TOOL_CHOICE_MODE_AUTO:
        config["toolChoice"] = {"auto": {}}
    elif mode == chat_pb2.TOOL_CHOICE_MODE_REQUIRED:
        config["toolChoice"] = {"any": {}}
    elif mode == chat_pb2.TOOL_CHOICE_MODE_TOOL:
        config["toolChoice"] = {"tool": {"name": prepared.choice_name}}
    return config


def _block_text(block: JSON) -> str:
    """What a content block costs, as cache_points counts it (images and documents: nothing)."""
    if "toolUse" in block:
        use = block["toolUse"]
        return f"{use['name']}{cache_points.json_text(use['input'])}"
    if "toolResult" in block:
        return "".join(_block_text(inner) for inner in block["toolResult"]["content"])
    text = block.get("text", "")
    return text if isinstance(text, str) else ""


def _takes_breakpoint(block: JSON) -> bool:
    return not block.keys().isdisjoint({"text", "image", "document", "toolUse", "toolResult"})


def _marked(content: list[JSON], index: int) -> list[JSON]:
    return [*content[: index + 1], dict(CACHE_POINT), *content[index + 1 :]]


LAYOUT = cache_points.Layout(_block_text, _takes_breakpoint, _marked)


def render(prepared: Prepared) -> tuple[JSON, int]:
    request = prepared.request
    body: JSON = {}
    texts = [*prompt_halves(prepared), *system_messages(prepared)]
    messages = _messages(prepared)
    config = _tool_config(prepared, messages)
    tools = config["tools"] if config is not None else []
    cache_tools, cache_stable, breakpoints = cache_points.place(
        prepared.cache_minimum,
        LAYOUT,
        [cache_points.json_text(tool) for tool in tools],
        texts,
        0 if prepared.stable else None,
        messages,
    )
    system: list[JSON] = [{"text": text} for text in texts]
    if cache_stable:
        system.insert(1, dict(CACHE_POINT))
        breakpoints += 1
    if system:
        body["system"] = system
    runtime = runtime_block(prepared)
    if runtime:
        last = messages[-1]
        messages[-1] = {**last, "content": [*last["content"], {"text": runtime}]}
    body["messages"] = messages
    inference: JSON = {}
    if request.HasField("max_tokens"):
        inference["maxTokens"] = request.max_tokens
    if request.HasField("temperature"):
        inference["temperature"] = request.temperature
    if inference:
        body["inferenceConfig"] = inference
    if config is not None:
        if cache_tools:
            tools.append(dict(CACHE_POINT))
            breakpoints += 1
        body["toolConfig"] = config
    assert breakpoints <= cache_points.MAX_BREAKPOINTS
    return body, breakpoints


SPEC = ProviderSpec(
    provider=provider_service_pb2.PROVIDER_AMAZON_BEDROCK_CONVERSE,
    name="bedrock-converse",
    telemetry_name="aws.bedrock",
    families=frozenset({"anthropic"}),
    render=render,
    path=path_for,
    max_tool_name_chars=64,
    render_messages=rendered_messages,
    join_rendered=joined,
    user_first=True,
    system_apart=True,
    parsed_arguments=True,
    call_id=PLAIN_NAME,
    max_call_id_chars=64,
    adapt=adapt,
    adapt_messages=merges,
    # Reasoning is not sent (adapt); a budget is no reason for a notice of its own.
    thinking_budget=True,
    tool_result_media=frozenset({"image", "file"}),
    tool_result_error=True,
    forced_choice_per_model=True,
)
