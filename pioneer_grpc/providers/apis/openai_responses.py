"""OpenAI Responses (`POST /v1/responses`).

Caching, as for Chat Completions: the stable half is the first input item, a
system message; the dynamic half is a system message after the conversation (or
right after the stable one when it goes before it). `instructions` is not used:
the halves must stay separately framed items so the stable one is an exact
prefix. `prompt_cache_key` is prefix + a digest of the thread, else of the
stable text, as for Chat Completions.

Function tools are sent with `"strict": false`: the field is required and strict
mode would reject ordinary schemas (it needs every property required and
`additionalProperties: false`).
"""

from __future__ import annotations

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.providers.common import (
    EFFORT_NAMES,
    JSON,
    TOOL_ERROR_LINE,
    Prepared,
    all_text,
    arguments_text,
    media_of,
    message_text,
    prompt_halves,
    resolve_media,
    result_text,
)
from pioneer_grpc.providers.spec import ProviderSpec
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2

PATH = "/v1/responses"


def _user_content(prepared: Prepared, index: int) -> str | list[JSON]:
    message = prepared.request.messages[index]
    text = message_text(prepared, message)
    if not message.content_parts:
        return text
    parts: list[JSON] = [{"type": "input_text", "text": text}] if text else []
    for j, part in enumerate(message.content_parts):
        media = media_of(part)
        if media is None:
            if part.text:
                parts.append({"type": "input_text", "text": part.text})
            continue
        m = resolve_media(*media)
        if m.kind == "image":
            image: JSON = {"type": "input_image", "detail": "auto"}
            if m.file_id:
                image["file_id"] = m.file_id
            else:
                image["image_url"] = m.url or m.data_url
            parts.append(image)
        elif m.kind == "file":
            file: JSON = {"type": "input_file"}
            if m.file_id:
                file["file_id"] = m.file_id
            elif m.url:
                file["file_url"] = m.url
            else:
                file["filename"] = m.filename or "attachment"
                file["file_data"] = m.data_url
            parts.append(file)
        else:
            field = f"{prepared.message_path(index)}.content_parts[{j}].{m.kind}"
            raise InvalidArgument.field(field, f"{m.kind} parts are not supported by the Responses API")
    return parts


def _input(prepared: Prepared) -> list[JSON]:
    items: list[JSON] = [{"role": "system", "content": text} for text in prompt_halves(prepared)]
    if prepared.prefix is not None:
        items.extend(prepared.prefix.rendered)
    items.extend(rendered_items(prepared))
    if prepared.runtime:
        items.append({"role": "system", "content": prepared.runtime})
    return items


def rendered_items(prepared: Prepared) -> list[JSON]:
    """The input items of the request's own messages, after the compiled prompt's.

    Each message renders on its own (a tool result's media stay in its output), so a
    prefix's items are followed by these as the whole conversation renders them.
    """
    items: list[JSON] = []
    for index, message in enumerate(prepared.request.messages):
        role = message.role
        if role == chat_pb2.CHAT_ROLE_SYSTEM:
            items.append({"role": "system", "content": all_text(prepared, message)})
        elif role == chat_pb2.CHAT_ROLE_USER:
            items.append({"role": "user", "content": _user_content(prepared, index)})
        elif role == chat_pb2.CHAT_ROLE_ASSISTANT:
            text = all_text(prepared, message)
            if text:
                items.append({"role": "assistant", "content": text})
            for call in message.tool_calls:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": arguments_text(call.arguments),
                    }
                )
        else:
            output: str | list[JSON] = result_text(prepared, message)
            if any(media_of(part) for part in message.content_parts):
                parts = _user_content(prepared, index)  # input_text, input_image, input_file
                output = parts
                if message.is_error and isinstance(parts, list):
                    output = [{"type": "input_text", "text": TOOL_ERROR_LINE}, *parts]
            items.append({"type": "function_call_output", "call_id": message.tool_call_id, "output": output})
    return items


def _tool_choice(prepared: Prepared) -> str | JSON | None:
    mode = prepared.choice
    if mode == chat_pb2.TOOL_CHOICE_MODE_AUTO:
        return "auto"
    if mode == chat_pb2.TOOL_CHOICE_MODE_NONE:
        return "none"
    if mode == chat_pb2.TOOL_CHOICE_MODE_REQUIRED:
        return "required"
    if mode == chat_pb2.TOOL_CHOICE_MODE_TOOL:
        return {"type": "function", "name": prepared.choice_name}
    return None


def render(prepared: Prepared) -> tuple[JSON, int]:
    request = prepared.request
    body: JSON = {"model": request.model, "input": _input(prepared)}
    if prepared.tools:
        body["tools"] = []
        for tool in prepared.tools:
            item: JSON = {"type": "function", "name": tool.name}
            if tool.description:
                item["description"] = tool.description
            item["parameters"] = tool.schema
            item["strict"] = False
            body["tools"].append(item)
    choice = _tool_choice(prepared)
    if choice is not None:
        body["tool_choice"] = choice
    if prepared.parallel is not None:
        body["parallel_tool_calls"] = prepared.parallel
    effort = EFFORT_NAMES.get(request.reasoning.effort)
    if effort and not request.reasoning.disabled:
        body["reasoning"] = {"effort": effort}
    if request.HasField("temperature"):
        body["temperature"] = request.temperature
    if request.HasField("max_tokens"):
        body["max_output_tokens"] = request.max_tokens
    if prepared.cache_key:
        body["prompt_cache_key"] = prepared.cache_key
    return body, 0


SPEC = ProviderSpec(
    provider=provider_service_pb2.PROVIDER_OPENAI_RESPONSES,
    name="openai-responses",
    telemetry_name="openai",
    families=frozenset({"openai"}),
    render=render,
    path=lambda model: PATH,
    render_messages=rendered_items,
    tool_result_media=frozenset({"image", "file"}),
)
