"""Gemini generateContent (`POST /v1beta/models/{model}:generateContent`).

The model is in the path, never in the body. Caching: Gemini 2.5 and later
cache implicitly, reading the longest prefix a recent request shared (at least
2,048 tokens on 2.5 Flash and Pro); nothing in the body asks for it.
`systemInstruction` holds the stable half first (then any system-role
messages), an exact prefix; the dynamic half is a marked user content after the
conversation (its own content: Gemini takes a function response turn only with
function responses in it), or the second part of `systemInstruction` when it
goes before the conversation. docs/providers.md says what explicit
`cachedContents` would add. Tool schemas go
in `parametersJsonSchema`, which takes JSON schema as is (`parameters` takes
only an OpenAPI subset). Tool results are `functionResponse` parts with
`{"output": text}`, the documented key for a function's output; results of
consecutive tool messages share one content, as the API pairs them with the
calls of the previous model turn.
"""

from __future__ import annotations

import re

from pioneer_grpc.errors import FieldViolation, InvalidArgument
from pioneer_grpc.providers.common import (
    JSON,
    Prepared,
    all_text,
    media_of,
    message_text,
    parse_arguments,
    prompt_halves,
    resolve_media,
    runtime_block,
    system_messages,
    thinking_budget,
    tool_name_for_call,
)
from pioneer_grpc.providers.conversation import Notice
from pioneer_grpc.providers.provider_rules import PARALLEL_UNSUPPORTED, Adapted, assistant_merges
from pioneer_grpc.providers.spec import ProviderSpec
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2

MODEL_ID = re.compile(r"(models/)?[A-Za-z0-9._-]+")
NAME_START = re.compile(r"[A-Za-z_]")


def path_for(model: str) -> str:
    return f"/v1beta/models/{model.removeprefix('models/')}:generateContent"


def _user_parts(prepared: Prepared, index: int) -> list[JSON]:
    message = prepared.request.messages[index]
    text = message_text(prepared, message)
    parts: list[JSON] = [{"text": text}] if text else []
    for j, part in enumerate(message.content_parts):
        media = media_of(part)
        if media is None:
            if part.text:
                parts.append({"text": part.text})
            continue
        m = resolve_media(*media)
        if m.data_b64:
            parts.append({"inlineData": {"mimeType": m.mime_type, "data": m.data_b64}})
            continue
        if not m.mime_type:
            field = f"{prepared.message_path(index)}.content_parts[{j}].{m.kind}.mime_type"
            raise InvalidArgument.field(field, "Gemini needs the MIME type of a file URI")
        parts.append({"fileData": {"mimeType": m.mime_type, "fileUri": m.url or m.file_id}})
    return parts


def _model_parts(prepared: Prepared, message: chat_pb2.ChatMessage) -> list[JSON]:
    text = all_text(prepared, message)
    parts: list[JSON] = [{"text": text}] if text else []
    for call in message.tool_calls:
        parts.append(
            {"functionCall": {"id": call.id, "name": call.name, "args": parse_arguments(call.arguments)}}
        )
    return parts


def _contents(prepared: Prepared) -> list[JSON]:
    # A prefix is only continued by a user message: nothing below merges into its contents.
    out: list[JSON] = list(prepared.prefix.rendered) if prepared.prefix is not None else []
    out.extend(rendered_messages(prepared))
    return out


def rendered_messages(prepared: Prepared) -> list[JSON]:
    """The request's own messages as `contents`; system ones go to `systemInstruction`."""
    out: list[JSON] = []
    request = prepared.request
    for index, message in enumerate(request.messages):
        role = message.role
        if role == chat_pb2.CHAT_ROLE_SYSTEM:
            continue  # in systemInstruction
        if role == chat_pb2.CHAT_ROLE_USER:
            out.append({"role": "user", "parts": _user_parts(prepared, index)})
        elif role == chat_pb2.CHAT_ROLE_ASSISTANT:
            parts = _model_parts(prepared, message)
            if out and out[-1]["role"] == "model":
                # A function call turn must follow a user or function response turn:
                # consecutive assistant messages are one model turn (a notice says so).
                out[-1]["parts"].extend(parts)
            else:
                out.append({"role": "model", "parts": parts})
        else:
            function_response: JSON = {
                "id": message.tool_call_id,
                "name": tool_name_for_call(request, index),
                # The key the Gemini API names for a failed call's details (ChatMessage.is_error).
                "response": {"error" if message.is_error else "output": all_text(prepared, message)},
            }
            media = [part for part in _user_parts(prepared, index) if "text" not in part]
            if media:
                function_response["parts"] = media  # inlineData / fileData, as in a user turn
            response = {"functionResponse": function_response}
            previous = out[-1] if out else None
            if (
                previous is not None
                and previous["role"] == "user"
                and all("functionResponse" in part for part in previous["parts"])
            ):
                previous["parts"].append(response)
            else:
                out.append({"role": "user", "parts": [response]})
    return out


def _tool_config(prepared: Prepared) -> JSON | None:
    mode = prepared.choice
    config: JSON
    if mode == chat_pb2.TOOL_CHOICE_MODE_AUTO:
        config = {"mode": "AUTO"}
    elif mode == chat_pb2.TOOL_CHOICE_MODE_NONE:
        config = {"mode": "NONE"}
    elif mode == chat_pb2.TOOL_CHOICE_MODE_REQUIRED:
        config = {"mode": "ANY"}
    elif mode == chat_pb2.TOOL_CHOICE_MODE_TOOL:
        config = {"mode": "ANY", "allowedFunctionNames": [prepared.choice_name]}
    else:
        return None
    return {"functionCallingConfig": config}


def render(prepared: Prepared) -> tuple[JSON, int]:
    request = prepared.request
    body: JSON = {}
    system = [*prompt_halves(prepared), *system_messages(prepared)]
    if system:
        body["systemInstruction"] = {"parts": [{"text": text} for text in system]}
    contents = _contents(prepared)
    runtime = runtime_block(prepared)
    if runtime:
        contents.append({"role": "user", "parts": [{"text": runtime}]})
    body["contents"] = contents
    if prepared.tools:
        declarations: list[JSON] = []
        for tool in prepared.tools:
            declaration: JSON = {"name": tool.name}
            if tool.description:
                declaration["description"] = tool.description
            declaration["parametersJsonSchema"] = tool.schema
            declarations.append(declaration)
        body["tools"] = [{"functionDeclarations": declarations}]
    tool_config = _tool_config(prepared)
    if tool_config is not None:
        body["toolConfig"] = tool_config
    # Gemini has no parallel-calls switch: prepared.parallel is not sent (a notice says so).
    generation: JSON = {}
    if request.HasField("temperature"):
        generation["temperature"] = request.temperature
    if request.HasField("max_tokens"):
        generation["maxOutputTokens"] = request.max_tokens
    if request.reasoning.disabled:
        generation["thinkingConfig"] = {"thinkingBudget": 0}
    else:
        budget = thinking_budget(request.reasoning)
        if budget is not None:
            generation["thinkingConfig"] = {"thinkingBudget": budget}
    if generation:
        body["generationConfig"] = generation
    return body, 0


def request_rules(request: chat_pb2.ChatRequest, path: str, reasoning: bool) -> list[FieldViolation]:
    return [
        FieldViolation(f"{path}.tools[{i}].name", "Gemini needs it to start with a letter or _")
        for i, tool in enumerate(request.tools)
        if tool.name and not NAME_START.match(tool.name)
    ]


def adapt(adapted: Adapted, origins: list[int], path: str) -> None:
    request = adapted.request
    if request.tools and request.HasField("parallel_tool_calls") and not request.parallel_tool_calls:
        adapted.notices.append(
            Notice(
                PARALLEL_UNSUPPORTED,
                "Gemini has no switch for parallel function calls: the model may return several "
                "calls at once; parallel_tool_calls=false was not sent",
                f"{path}.parallel_tool_calls",
            )
        )
    merges(adapted, origins, path)


def merges(adapted: Adapted, origins: list[int], path: str) -> None:
    assistant_merges(
        adapted,
        origins,
        path,
        "sent in one model turn with the assistant message before it "
        "(Gemini needs a function call turn to follow a user or function response turn)",
    )


SPEC = ProviderSpec(
    provider=provider_service_pb2.PROVIDER_GEMINI_GENERATE_CONTENT,
    name="gemini",
    telemetry_name="gcp.gemini",
    tool_error_in_content="the result went under functionResponse.response.error instead of .output",
    families=frozenset({"gemini"}),
    render=render,
    path=path_for,
    # Function names: letters, digits, _ . : and -, starting with a letter or _ (request_rules),
    # at most 64 characters (the generativelanguage v1beta reference of FunctionDeclaration and
    # FunctionCall; 128 is Vertex AI's limit, not this API's).
    tool_name_chars="A-Za-z0-9_.:-",
    max_tool_name_chars=64,
    render_messages=rendered_messages,
    user_first=True,
    system_apart=True,
    parsed_arguments=True,
    # Gemini pairs a function response with the calls of the model turn before it.
    unique_call_ids=False,
    request_rules=request_rules,
    adapt=adapt,
    adapt_messages=merges,
    thinking_budget=True,
    result_needs_name=True,
    tool_result_media=frozenset({"image", "file", "audio", "video"}),
    model_id=MODEL_ID,
)
