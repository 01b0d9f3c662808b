"""OpenAI Chat Completions (`POST /v1/chat/completions`).

Caching (automatic prefix caching: prompts of 1,024 tokens and more, read in
steps of 128): the stable half is the first system message, a byte-identical
prefix across rounds; the dynamic half is a system message after the
conversation (or right after the stable one when it goes before the
conversation), so a changed runtime fact re-sends only itself.
`prompt_cache_key` (prefix + a digest of the thread, else of the stable text)
routes a thread's rounds to the same cache. Messages rather than one message
with parts, because how parts are joined is not documented while message
boundaries are.
"""

from __future__ import annotations

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.providers.common import (
    EFFORT_NAMES,
    JSON,
    Prepared,
    all_text,
    arguments_text,
    media_of,
    message_text,
    prompt_halves,
    resolve_media,
    result_text,
)
from pioneer_grpc.providers.conversation import Notice
from pioneer_grpc.providers.provider_rules import NAME_DROPPED, Adapted
from pioneer_grpc.providers.spec import PLAIN_NAME, ProviderSpec
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2

PATH = "/v1/chat/completions"


def _user_content(prepared: Prepared, index: int) -> str | list[JSON]:
    message = prepared.request.messages[index]
    text = message_text(prepared, message)
    if not message.content_parts:
        return text
    parts: list[JSON] = [{"type": "text", "text": text}] if text else []
    for j, part in enumerate(message.content_parts):
        media = media_of(part)
        if media is None:
            if part.text:
                parts.append({"type": "text", "text": part.text})
            continue
        field = f"{prepared.message_path(index)}.content_parts[{j}].{media[0]}"
        m = resolve_media(*media)
        if m.kind == "image":
            if m.file_id:
                raise InvalidArgument.field(
                    field, "Chat Completions takes images as a URL or data, not a file id"
                )
            parts.append({"type": "image_url", "image_url": {"url": m.url or m.data_url}})
        elif m.kind == "file":
            if m.url:
                raise InvalidArgument.field(
                    field, "Chat Completions takes files as data or a file id, not a URL"
                )
            if m.file_id:
                parts.append({"type": "file", "file": {"file_id": m.file_id}})
            else:
                parts.append(
                    {
                        "type": "file",
                        "file": {"filename": m.filename or "attachment", "file_data": m.data_url},
                    }
                )
        else:
            raise InvalidArgument.field(field, f"{m.kind} parts are not supported by Chat Completions")
    return parts


def _messages(prepared: Prepared) -> list[JSON]:
    out: list[JSON] = [{"role": "system", "content": text} for text in prompt_halves(prepared)]
    if prepared.prefix is not None:
        out.extend(prepared.prefix.rendered)
    out.extend(rendered_messages(prepared))
    if prepared.runtime:
        out.append({"role": "system", "content": prepared.runtime})
    return out


def rendered_messages(prepared: Prepared) -> list[JSON]:
    """The request's own messages, after the compiled prompt's."""
    out: list[JSON] = []
    # Media of the tool results of the current run of tool messages: Chat Completions takes
    # none in a tool message, so they follow the run in one user message (a notice says so).
    moved: list[JSON] = []
    for index, message in enumerate(prepared.request.messages):
        role = message.role
        if moved and role != chat_pb2.CHAT_ROLE_TOOL:
            out.append({"role": "user", "content": moved})
            moved = []
        if role == chat_pb2.CHAT_ROLE_SYSTEM:
            item: JSON = {"role": "system", "content": all_text(prepared, message)}
        elif role == chat_pb2.CHAT_ROLE_USER:
            item = {"role": "user", "content": _user_content(prepared, index)}
        elif role == chat_pb2.CHAT_ROLE_ASSISTANT:
            item = {"role": "assistant"}
            text = all_text(prepared, message)
            if text or not message.tool_calls:
                item["content"] = text
            if message.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": arguments_text(c.arguments)},
                    }
                    for c in message.tool_calls
                ]
        else:
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id,
                    "content": result_text(prepared, message),
                }
            )
            media = _media_parts(prepared, index)
            if media:
                moved.append({"type": "text", "text": f"Returned by tool call {message.tool_call_id}:"})
                moved.extend(media)
            continue
        if message.name:
            item["name"] = message.name
        out.append(item)
    if moved:
        out.append({"role": "user", "content": moved})
    return out


def _media_parts(prepared: Prepared, index: int) -> list[JSON]:
    content = _user_content(prepared, index)
    if isinstance(content, str):
        return []
    return [part for part in content if part["type"] != "text"]


def _tool_choice(prepared: Prepared) -> str | JSON | None:
    mode = prepared.choice
    if mode == chat_pb2.TOOL_CHOICE_MODE_AUTO:
        return "auto"
    if mode == chat_pb2.TOOL_CHOICE_MODE_NONE:
        return "none"
    if mode == chat_pb2.TOOL_CHOICE_MODE_REQUIRED:
        return "required"
    if mode == chat_pb2.TOOL_CHOICE_MODE_TOOL:
        return {"type": "function", "function": {"name": prepared.choice_name}}
    return None


def render(prepared: Prepared) -> tuple[JSON, int]:
    request = prepared.request
    body: JSON = {"model": request.model, "messages": _messages(prepared)}
    if prepared.tools:
        body["tools"] = []
        for tool in prepared.tools:
            function: JSON = {"name": tool.name}
            if tool.description:
                function["description"] = tool.description
            function["parameters"] = tool.schema
            body["tools"].append({"type": "function", "function": function})
    choice = _tool_choice(prepared)
    if choice is not None:
        body["tool_choice"] = choice
    if prepared.parallel is not None:
        body["parallel_tool_calls"] = prepared.parallel
    # Reasoning off is the provider default for models that can turn it off;
    # sending "none" would be rejected by models that cannot.
    effort = EFFORT_NAMES.get(request.reasoning.effort)
    if effort and not request.reasoning.disabled:
        body["reasoning_effort"] = effort
    if request.HasField("temperature"):
        body["temperature"] = request.temperature
    if request.HasField("max_tokens"):
        body["max_completion_tokens"] = request.max_tokens
    if prepared.cache_key:
        body["prompt_cache_key"] = prepared.cache_key
    return body, 0


def participant_names_as_sent(adapted: Adapted, origins: list[int], path: str) -> None:
    if adapted.prefix is not None:
        adapted.notices.extend(adapted.prefix.message_notices)
    for message, origin in zip(adapted.request.messages, origins, strict=True):
        if (
            message.role != chat_pb2.CHAT_ROLE_TOOL
            and message.name
            and not PLAIN_NAME.fullmatch(message.name)
        ):
            adapted.notices.append(
                Notice(
                    NAME_DROPPED,
                    f"OpenAI takes participant names of [A-Za-z0-9_-] only: {message.name!r} was not sent",
                    f"{path}.messages[{origin}].name",
                )
            )
            message.name = ""


SPEC = ProviderSpec(
    provider=provider_service_pb2.PROVIDER_OPENAI_CHAT_COMPLETIONS,
    name="openai-chat",
    telemetry_name="openai",
    families=frozenset({"openai"}),
    render=render,
    path=lambda model: PATH,
    render_messages=rendered_messages,
    participant_names=True,
    adapt=participant_names_as_sent,
    adapt_messages=participant_names_as_sent,
)
