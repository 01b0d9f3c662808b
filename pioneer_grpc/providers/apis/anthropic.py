"""Anthropic Messages (`POST /v1/messages`).

Caching (providers/cache_points.py): `system` is a list of text blocks: the
stable half, then the text of any system-role messages (hoisted there: the
top-level field works with every model, system messages inside `messages` are a
recent addition), the dynamic half among them only when it goes before the
conversation. Otherwise the dynamic half is a marked text block ending the
newest user turn (common.runtime_block), after the anchor that caches the turn.
Breakpoints (`cache_control: {"type": "ephemeral"}`, the last key of its block)
go on the last tool definition, the stable block and two blocks of the
conversation, each only where the prefix up to it meets the model's minimum:
at most the four the API allows. User turns are always block lists, so a
breakpoint moving on adds or removes that key and nothing else.

`max_tokens` is required: an unset value becomes 4,096 (plus the thinking
budget when extended thinking is on). `temperature` is not sent: the current
Messages API has no sampling parameters (the official SDK no longer accepts
them), so it is dropped like Gemini drops parallel_tool_calls.
"""

from __future__ import annotations

import base64

from pioneer_grpc.errors import FieldViolation, InvalidArgument
from pioneer_grpc.providers import cache_points
from pioneer_grpc.providers.common import (
    JSON,
    Media,
    Prepared,
    all_text,
    anthropic_thinking,
    media_of,
    message_text,
    parse_arguments,
    resolve_media,
    runtime_block,
    system_messages,
    thinking_budget,
)
from pioneer_grpc.providers.conversation import Notice
from pioneer_grpc.providers.provider_rules import (
    FORCING_CHOICES,
    TEMPERATURE_NOT_SENT,
    TOOLS_DECLARED,
    Adapted,
    has_tool_results,
    tools_called,
    trim_final_assistant,
)
from pioneer_grpc.providers.spec import PLAIN_NAME, ProviderSpec
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2

PATH = "/v1/messages"
EPHEMERAL: JSON = {"type": "ephemeral"}
IMAGE_TYPES = {"image/jpeg", "image/png", "image/gif", "image/webp"}
THINKING_OFF = "thinking_off_in_tool_loop"


def _image(m: Media, field: str) -> JSON:
    if m.file_id:
        source: JSON = {"type": "file", "file_id": m.file_id}
    elif m.url:
        source = {"type": "url", "url": m.url}
    else:
        if m.mime_type not in IMAGE_TYPES:
            raise InvalidArgument.field(field, f"Anthropic takes {', '.join(sorted(IMAGE_TYPES))} images")
        source = {"type": "base64", "media_type": m.mime_type, "data": m.data_b64}
    return {"type": "image", "source": source}


def _document(m: Media, field: str) -> JSON:
    if m.file_id:
        source: JSON = {"type": "file", "file_id": m.file_id}
    elif m.url:
        source = {"type": "url", "url": m.url}
    elif m.mime_type == "application/pdf":
        source = {"type": "base64", "media_type": "application/pdf", "data": m.data_b64}
    elif m.mime_type == "text/plain":
        try:
            text = base64.b64decode(m.data_b64).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidArgument.field(field, "text/plain data must be UTF-8") from None
        source = {"type": "text", "media_type": "text/plain", "data": text}
    else:
        raise InvalidArgument.field(field, "Anthropic takes application/pdf or text/plain documents")
    block: JSON = {"type": "document", "source": source}
    if m.filename:
        block["title"] = m.filename
    return block


def _user_content(prepared: Prepared, index: int) -> list[JSON]:
    message = prepared.request.messages[index]
    text = message_text(prepared, message)
    # Anthropic refuses text blocks without non-whitespace text.
    blocks: list[JSON] = [{"type": "text", "text": text}] if text.strip() else []
    for j, part in enumerate(message.content_parts):
        media = media_of(part)
        if media is None:
            if part.text.strip():
                blocks.append({"type": "text", "text": part.text})
            continue
        field = f"{prepared.message_path(index)}.content_parts[{j}].{media[0]}"
        m = resolve_media(*media)
        if m.kind == "image":
            blocks.append(_image(m, field))
        elif m.kind == "file":
            blocks.append(_document(m, field))
        else:
            raise InvalidArgument.field(field, f"{m.kind} parts are not supported by Anthropic")
    return blocks


def _assistant_content(prepared: Prepared, message: chat_pb2.ChatMessage) -> str | list[JSON]:
    text = all_text(prepared, message)
    if not message.tool_calls:
        return text
    blocks: list[JSON] = [{"type": "text", "text": text}] if text.strip() else []
    for call in message.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": parse_arguments(call.arguments)}
        )
    return blocks


def _messages(prepared: Prepared) -> list[JSON]:
    # A prefix is only continued by a user message: nothing below merges into its messages.
    out: list[JSON] = list(prepared.prefix.rendered) if prepared.prefix is not None else []
    out.extend(rendered_messages(prepared))
    return out


def rendered_messages(prepared: Prepared) -> list[JSON]:
    """The request's own messages (`messages` of the body); system ones go to `system`."""
    out: list[JSON] = []
    for index, message in enumerate(prepared.request.messages):
        role = message.role
        if role == chat_pb2.CHAT_ROLE_SYSTEM:
            continue  # in `system`
        if role == chat_pb2.CHAT_ROLE_USER:
            out.append({"role": "user", "content": _user_content(prepared, index)})
        elif role == chat_pb2.CHAT_ROLE_ASSISTANT:
            out.append({"role": "assistant", "content": _assistant_content(prepared, message)})
        else:
            result: JSON = {"type": "tool_result", "tool_use_id": message.tool_call_id}
            if any(media_of(part) for part in message.content_parts):
                result["content"] = _user_content(prepared, index)  # text, image and document blocks
            else:
                text = all_text(prepared, message)
                if text.strip():
                    result["content"] = text
            if message.is_error:
                result["is_error"] = True
            # Results of parallel calls answer one assistant turn: one user message.
            previous = out[-1] if out else None
            if (
                previous is not None
                and previous["role"] == "user"
                and isinstance(previous["content"], list)
                and previous["content"]
                and all(block["type"] == "tool_result" for block in previous["content"])
            ):
                previous["content"].append(result)
            else:
                out.append({"role": "user", "content": [result]})
    return out


def _tool_choice(prepared: Prepared) -> JSON | None:
    mode = prepared.choice
    choice: JSON
    if mode == chat_pb2.TOOL_CHOICE_MODE_NONE:
        return {"type": "none"}
    if mode == chat_pb2.TOOL_CHOICE_MODE_AUTO:
        choice = {"type": "auto"}
    elif mode == chat_pb2.TOOL_CHOICE_MODE_REQUIRED:
        choice = {"type": "any"}
    elif mode == chat_pb2.TOOL_CHOICE_MODE_TOOL:
        choice = {"type": "tool", "name": prepared.choice_name}
    elif prepared.parallel is False:
        choice = {"type": "auto"}  # the provider default, spelled out to carry the flag
    else:
        return None
    if prepared.parallel is False:
        choice["disable_parallel_tool_use"] = True
    return choice


def _block_text(block: JSON) -> str:
    """What a content block costs, as cache_points counts it (images and documents: nothing)."""
    kind = block.get("type")
    if kind == "tool_use":
        return f"{block['name']}{cache_points.json_text(block['input'])}"
    if kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, str):
            return content
        return "".join(_block_text(inner) for inner in content)
    text = block.get("text", "")
    return text if isinstance(text, str) else ""


def _takes_breakpoint(block: JSON) -> bool:
    return block.get("type") in {"text", "image", "document", "tool_use", "tool_result"}


def _marked(content: list[JSON], index: int) -> list[JSON]:
    out = list(content)
    out[index] = {**content[index], "cache_control": dict(EPHEMERAL)}
    return out


LAYOUT = cache_points.Layout(_block_text, _takes_breakpoint, _marked)


def _with_runtime(messages: list[JSON], text: str) -> None:
    """The runtime context as a text block ending the newest user turn (after its tool results,
    where Anthropic wants text): a copy of that message, which a kept prefix may share."""
    last = messages[-1]
    messages[-1] = {**last, "content": [*last["content"], {"type": "text", "text": text}]}


def _tools(prepared: Prepared) -> list[JSON]:
    tools: list[JSON] = []
    for tool in prepared.tools:
        item: JSON = {"name": tool.name}
        if tool.description:
            item["description"] = tool.description
        item["input_schema"] = tool.schema
        tools.append(item)
    return tools


def render(prepared: Prepared) -> tuple[JSON, int]:
    request = prepared.request
    budget, max_tokens = anthropic_thinking(request)
    body: JSON = {"model": request.model, "max_tokens": max_tokens}

    texts = [prepared.stable, prepared.dynamic, *prepared.leading_system, *system_messages(prepared)]
    system: list[JSON] = [{"type": "text", "text": text} for text in texts if text]
    messages = _messages(prepared)
    tools = _tools(prepared)
    cache_tools, cache_stable, breakpoints = cache_points.place(
        prepared.cache_minimum,
        LAYOUT,
        [cache_points.json_text(tool) for tool in tools],
        [block["text"] for block in system],
        0 if prepared.stable else None,
        messages,
    )
    if cache_stable:
        system[0]["cache_control"] = dict(EPHEMERAL)
        breakpoints += 1
    runtime = runtime_block(prepared)
    if runtime:
        _with_runtime(messages, runtime)
    if system:
        body["system"] = system
    body["messages"] = messages

    if tools:
        if cache_tools:
            tools[-1]["cache_control"] = dict(EPHEMERAL)
            breakpoints += 1
        body["tools"] = tools
    choice = _tool_choice(prepared)
    if choice is not None:
        body["tool_choice"] = choice
    if request.reasoning.disabled:
        body["thinking"] = {"type": "disabled"}
    elif budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    assert breakpoints <= cache_points.MAX_BREAKPOINTS
    return body, breakpoints


def thinking_on(request: chat_pb2.ChatRequest) -> bool:
    return thinking_budget(request.reasoning) is not None


def request_rules(request: chat_pb2.ChatRequest, path: str, reasoning: bool) -> list[FieldViolation]:
    thinking = reasoning and thinking_on(request)
    if request.tools and request.tool_choice.mode in FORCING_CHOICES and thinking:
        return [
            FieldViolation(
                f"{path}.tool_choice.mode",
                "Anthropic allows only auto or none with extended thinking: "
                "turn reasoning off (reasoning.disabled) or let the model choose",
            )
        ]
    return []


def _continues_assistant_turn(messages: list[chat_pb2.ChatMessage]) -> bool:
    """True when the last user message with text of its own is followed by an assistant message."""
    for message in reversed(messages):
        if message.role == chat_pb2.CHAT_ROLE_ASSISTANT:
            return True
        if message.role == chat_pb2.CHAT_ROLE_USER:
            return False
    return False


def adapt(adapted: Adapted, origins: list[int], path: str) -> None:
    request = adapted.request
    if thinking_on(request) and _continues_assistant_turn(list(request.messages)):
        request.reasoning.Clear()
        request.reasoning.disabled = True
        adapted.notices.append(
            Notice(
                THINKING_OFF,
                "extended thinking was turned off for this round: it continues an assistant turn "
                "(a tool loop or a prefill) whose thinking blocks cannot be sent back to Anthropic",
                f"{path}.reasoning",
            )
        )
    called = dict.fromkeys(adapted.prefix.called if adapted.prefix is not None else ())
    called.update(tools_called(request.messages))
    has_results = (adapted.prefix is not None and adapted.prefix.has_results) or has_tool_results(
        request.messages
    )
    if not request.tools and (called or has_results):
        adapted.history_tools = list(called) or ["tool"]
        adapted.notices.append(
            Notice(
                TOOLS_DECLARED,
                "Anthropic refuses tool calls in the history without tool definitions: "
                f"{', '.join(adapted.history_tools)} declared with tool_choice none",
                f"{path}.tools",
            )
        )
    if request.HasField("temperature"):
        adapted.notices.append(
            Notice(TEMPERATURE_NOT_SENT, "the Messages API takes no temperature here", f"{path}.temperature")
        )
    trim_final_assistant(
        adapted, origins, path, "Anthropic refuses a final assistant message ending in whitespace"
    )


SPEC = ProviderSpec(
    provider=provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES,
    name="anthropic",
    telemetry_name="anthropic",
    families=frozenset({"anthropic"}),
    render=render,
    path=lambda model: PATH,
    max_tool_name_chars=128,
    render_messages=rendered_messages,
    user_first=True,
    system_apart=True,
    parsed_arguments=True,
    call_id=PLAIN_NAME,
    request_rules=request_rules,
    adapt=adapt,
    thinking_budget=True,
    min_thinking_budget=1024,
    tool_result_media=frozenset({"image", "file"}),
    tool_result_error=True,
)
