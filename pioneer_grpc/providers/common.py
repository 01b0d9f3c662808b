"""What every provider renderer shares: the validated request, options, text and media helpers."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from pioneer_grpc.artifacts import append_artifact_block, message_header
from pioneer_grpc.caps import json_depth_over
from pioneer_grpc.caps.history import MAX_ARGUMENTS_DEPTH
from pioneer_grpc.caps.json_text import LONE_SURROGATE, lone_surrogate_in
from pioneer_grpc.compiler.boundary import CACHE_BOUNDARY
from pioneer_grpc.providers import body_json
from pioneer_grpc.providers.cache_points import CacheMinimum
from pioneer_grpc.providers.conversation import Notice, RenderedPrefix
from pioneer_grpc.v1 import chat_pb2, prompt_pb2

JSON = dict[str, Any]

# The compiler's cache boundary (facts: PROMT_CACHE_BOUNDARY), defined once, by the
# compiler. It separates the halves of full_system_text and must never reach a model.
DEFAULT_BOUNDARY_MARKER = CACHE_BOUNDARY
# Removed from system text: the marker, then its core without the newlines,
# which a person would recognise (and paste).
BOUNDARY_MARKERS = (DEFAULT_BOUNDARY_MARKER, DEFAULT_BOUNDARY_MARKER.strip())

DEFAULT_CACHE_KEY_PREFIX = "pioneer-"
# The character rule of a model the registry gives no minimum.
DEFAULT_CACHE_MINIMUM = CacheMinimum()
# OpenAI caps prompt_cache_key at 64 characters; the key is prefix + 32 hex digits.
MAX_CACHE_KEY_PREFIX_CHARS = 32
CACHE_KEY_FINGERPRINT_CHARS = 32
# Anthropic requires max_tokens; this is what a request that leaves it unset gets
# (plus the thinking budget when extended thinking is on).
DEFAULT_ANTHROPIC_MAX_TOKENS = 4096

# Thinking budget for an effort level, where a provider takes a budget rather
# than an effort (Anthropic, Gemini). Anthropic's minimum budget is 1,024.
EFFORT_BUDGET_TOKENS: dict[int, int] = {
    chat_pb2.REASONING_EFFORT_MINIMAL: 1024,
    chat_pb2.REASONING_EFFORT_LOW: 2048,
    chat_pb2.REASONING_EFFORT_MEDIUM: 8192,
    chat_pb2.REASONING_EFFORT_HIGH: 16384,
}
EFFORT_NAMES: dict[int, str] = {
    chat_pb2.REASONING_EFFORT_MINIMAL: "minimal",
    chat_pb2.REASONING_EFFORT_LOW: "low",
    chat_pb2.REASONING_EFFORT_MEDIUM: "medium",
    chat_pb2.REASONING_EFFORT_HIGH: "high",
}


@dataclass(frozen=True)
class Options:
    """RenderOptions with the server defaults filled in."""

    # None: a breakpoint's prefix is measured against the model's minimum in tokens.
    anthropic_min_cache_chars: int | None = None
    cache_key_prefix: str = DEFAULT_CACHE_KEY_PREFIX
    # The compiled prompt's dynamic half after the conversation (DynamicContextPlacement).
    dynamic_after: bool = True
    # The thread OpenAI's prompt_cache_key is derived from; None: the stable prompt.
    cache_thread_id: str | None = None


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    schema: JSON


@dataclass(frozen=True)
class Prepared:
    """A validated ChatRequest plus what validation derived from it.

    Tool choice and parallel_tool_calls are already cleared when there are no
    tools; `stable` and `dynamic` are the compiled prompt halves with the
    boundary marker removed.
    """

    request: chat_pb2.ChatRequest
    options: Options
    path: str
    tools: list[Tool]
    choice: int  # ToolChoiceMode
    choice_name: str
    parallel: bool | None
    stable: str
    dynamic: str
    # What the provider rules adapted (RenderNotice), and for each message of
    # `request` the index of the caller's message it came from.
    notices: tuple[Notice, ...] = ()
    origins: tuple[int, ...] = ()
    # The conversation's first messages, rendered before `request`'s, which follow them.
    prefix: RenderedPrefix | None = None
    # The text of the caller's system messages that open the conversation (taken out
    # of `request`), sent right after the compiled prompt; none when the dynamic half
    # goes before the conversation, which then carries them at its end.
    leading_system: tuple[str, ...] = ()
    # The dynamic half when it goes after the conversation (`dynamic` is then empty):
    # each renderer puts it after the newest user turn (runtime_block).
    runtime: str = ""
    # The smallest prefix a cache breakpoint may end (Anthropic, Bedrock).
    cache_minimum: CacheMinimum = DEFAULT_CACHE_MINIMUM

    def message_path(self, index: int) -> str:
        origin = self.origins[index] if index < len(self.origins) else index
        return f"{self.path}.messages[{origin}]"

    @property
    def cache_key(self) -> str | None:
        """`prompt_cache_key` for OpenAI: prefix + 32 hex digits of sha256 of the thread id, so
        every round of a thread routes to the same cache (OpenAI combines the key with the
        prompt's first tokens to pick a machine); without a thread, of the stable text (the
        manifest's fingerprint_stable, cut); None without either.
        """
        thread = self.options.cache_thread_id
        if thread:
            source = b"thread:" + thread.encode("utf-8")
        elif self.stable:
            source = self.stable.encode("utf-8")
        else:
            return None
        digest = hashlib.sha256(source).hexdigest()
        return self.options.cache_key_prefix + digest[:CACHE_KEY_FINGERPRINT_CHARS]


# A body rendered from a request up to this size is written in one orjson call: even
# escaped six times over it stays within a few milliseconds (body_json.py writes larger ones).
ONE_CALL_SOURCE_BYTES = 1024 * 1024


def dumps(body: JSON, *, source_bytes: int = 0) -> str:
    """`encoded_body` as text."""
    return encoded_body(body, source_bytes=source_bytes).decode("utf-8")


def encoded_body(body: JSON, *, source_bytes: int = 0) -> bytes:
    """`dumps(body)` as UTF-8: what goes on the wire, never decoded only to be encoded again.

    One encoder, orjson, writes every body (body_json.py), so the text depends on
    the body alone (a float is `1e-7`, never `1e-07`). `source_bytes`: the encoded
    size of what the body was rendered from, which bounds the body's size; up to
    ONE_CALL_SOURCE_BYTES it is written in one call, above it in bounded pieces.
    """
    if source_bytes <= ONE_CALL_SOURCE_BYTES:
        try:
            return orjson.dumps(body)
        except orjson.JSONEncodeError:
            pass  # an integer past 64 bits: body_json writes it
    return body_json.encoded(body)


# --- the compiled prompt ---------------------------------------------------------------


def strip_markers(text: str) -> str:
    for marker in BOUNDARY_MARKERS:  # the full form first, so the core never splits one
        if marker in text:
            text = text.replace(marker, "")
    return text


def split_compiled(compiled: prompt_pb2.CompiledPromptPayload) -> tuple[str, str]:
    """(stable, dynamic) of a compiled prompt, markers removed.

    A payload carrying only full_system_text is split at its marker.
    """
    stable, dynamic = compiled.stable_system_text, compiled.dynamic_system_text
    if not stable and not dynamic and compiled.full_system_text:
        full = compiled.full_system_text
        for marker in BOUNDARY_MARKERS:
            if marker in full:
                stable, _, dynamic = full.partition(marker)
                break
        else:
            stable = full
    return strip_markers(stable), strip_markers(dynamic)


# --- messages ---------------------------------------------------------------------------

ROLE_NAMES: dict[int, str] = {
    chat_pb2.CHAT_ROLE_SYSTEM: "system",
    chat_pb2.CHAT_ROLE_USER: "user",
    chat_pb2.CHAT_ROLE_ASSISTANT: "assistant",
    chat_pb2.CHAT_ROLE_TOOL: "tool",
}


def message_text(prepared: Prepared, message: chat_pb2.ChatMessage) -> str:
    """`content` with the message's artifact block appended; markers removed from system text."""
    return _content_text(message)


def _content_text(message: chat_pb2.ChatMessage) -> str:
    text = message.content
    if message.role == chat_pb2.CHAT_ROLE_SYSTEM:
        text = strip_markers(text)
    if not message.artifact_refs:
        return text
    return append_artifact_block(text, message_header(ROLE_NAMES[message.role]), message.artifact_refs)


def all_text(prepared: Prepared, message: chat_pb2.ChatMessage) -> str:
    """Message text followed by its text parts, for messages that carry text only."""
    return text_of(message)


# The first line of a failed tool result's text where the API has no field marking it (ChatMessage.is_error).
TOOL_ERROR_LINE = "Tool error:"


def result_text(prepared: Prepared, message: chat_pb2.ChatMessage) -> str:
    """A tool result's text; a failed one's after TOOL_ERROR_LINE, for APIs with no error field."""
    text = all_text(prepared, message)
    if not message.is_error:
        return text
    return f"{TOOL_ERROR_LINE}\n{text}" if text else TOOL_ERROR_LINE


def text_of(message: chat_pb2.ChatMessage) -> str:
    """`all_text` of a message on its own."""
    texts = [_content_text(message)]
    for part in message.content_parts:
        text = part.text
        if message.role == chat_pb2.CHAT_ROLE_SYSTEM:
            text = strip_markers(text)
        texts.append(text)
    return "\n".join(t for t in texts if t)


def system_messages(prepared: Prepared) -> list[str]:
    """Text of system-role messages, in order, for APIs that take system text apart from messages."""
    texts = list(prepared.prefix.system_texts) if prepared.prefix is not None else []
    for message in prepared.request.messages:
        if message.role == chat_pb2.CHAT_ROLE_SYSTEM:
            text = all_text(prepared, message)
            if text:
                texts.append(text)
    return texts


def prompt_halves(prepared: Prepared) -> list[str]:
    """The system text before the conversation: the compiled prompt's halves (its dynamic half
    unless it goes after the conversation), then the caller's."""
    return [text for text in (prepared.stable, prepared.dynamic, *prepared.leading_system) if text]


# What frames the dynamic half where it rides in a user turn (Anthropic, Bedrock, Gemini), so
# the model reads it as the system's facts for this request, not as something the user wrote.
RUNTIME_OPEN = "<runtime-context>\nSet by the system for this request (not written by the user):\n\n"
RUNTIME_CLOSE = "\n</runtime-context>"


def runtime_block(prepared: Prepared) -> str:
    """The dynamic half as the text that follows the newest user turn; "" when it goes before."""
    return f"{RUNTIME_OPEN}{prepared.runtime}{RUNTIME_CLOSE}" if prepared.runtime else ""


def take_leading_system(request: chat_pb2.ChatRequest) -> list[str]:
    """Removes the system messages that open `request`'s conversation; their text, in order."""
    count = 0
    while count < len(request.messages) and request.messages[count].role == chat_pb2.CHAT_ROLE_SYSTEM:
        count += 1
    texts = [text_of(message) for message in request.messages[:count]]
    del request.messages[:count]
    return texts


def _not_json(constant: str) -> Any:
    raise ValueError(f"arguments are not valid JSON: {constant} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"arguments are not valid JSON: {text[:40]} is out of a double's range")
    return number


def parse_arguments(arguments: str) -> JSON:
    """Tool call arguments as a JSON object ("" is {}); ValueError when they are not one."""
    if not arguments.strip():
        return {}
    if json_depth_over(arguments, MAX_ARGUMENTS_DEPTH):
        # json.loads recurses once per level: deeper input would end in RecursionError.
        raise ValueError(f"arguments nest deeper than {MAX_ARGUMENTS_DEPTH} levels")
    try:
        value = json.loads(arguments, parse_constant=_not_json, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise ValueError(f"arguments are not valid JSON: {exc.msg} at char {exc.pos}") from None
    if not isinstance(value, dict):
        raise ValueError("arguments must be a JSON object")
    if lone_surrogate_in(arguments, value):
        raise ValueError(f"arguments are not valid JSON: {LONE_SURROGATE}")
    return value


def arguments_text(arguments: str) -> str:
    """Arguments for APIs that take them as text: as produced, but "" (no arguments) as "{}"."""
    return arguments if arguments.strip() else "{}"


def tool_name_for_call(request: chat_pb2.ChatRequest, index: int) -> str:
    """Name of the tool a tool message answers: its own `name`, else the matching earlier call."""
    message = request.messages[index]
    if message.name:
        return message.name
    for earlier in reversed(request.messages[:index]):
        for call in earlier.tool_calls:
            if call.id == message.tool_call_id:
                return call.name
    return ""


# --- media ------------------------------------------------------------------------------

MediaKind = Literal["image", "file", "audio", "video"]
MEDIA_KINDS: tuple[MediaKind, ...] = ("image", "file", "audio", "video")


@dataclass(frozen=True)
class Media:
    """Where a media part's content is: inline base64 data, a URL, or a provider file id."""

    kind: MediaKind
    mime_type: str
    filename: str
    data_b64: str = ""
    url: str = ""
    file_id: str = ""

    @property
    def data_url(self) -> str:
        return f"data:{self.mime_type};base64,{self.data_b64}"


def media_of(part: chat_pb2.ContentPart) -> tuple[MediaKind, chat_pb2.MediaPart] | None:
    which = part.WhichOneof("part")
    for kind in MEDIA_KINDS:
        if which == kind:
            return kind, getattr(part, kind)
    return None


def resolve_media(kind: MediaKind, media: chat_pb2.MediaPart) -> Media:
    """ValueError (with a description for a field violation) when the part cannot be sent.

    `uri` may be https:// or http:// (a URL), data: (inline base64), or anything
    else, taken as a provider file id (OpenAI `file-...`, Anthropic `file_...`,
    a Gemini file URI).
    """
    source = media.WhichOneof("source")
    if source == "data":
        if not media.mime_type:
            raise ValueError("mime_type is required with inline data")
        return Media(
            kind, media.mime_type, media.filename, data_b64=base64.b64encode(media.data).decode("ascii")
        )
    if source == "uri":
        uri = media.uri
        if uri.startswith("data:"):
            header, sep, payload = uri[5:].partition(",")
            if not sep or not header.endswith(";base64"):
                raise ValueError("a data: URI must be base64 (data:MIME;base64,...)")
            try:
                base64.b64decode(payload, validate=True)
            except binascii.Error:
                raise ValueError("the data: URI payload is not valid base64") from None
            mime = header[: -len(";base64")] or media.mime_type
            if not mime:
                raise ValueError("mime_type is required with inline data")
            return Media(kind, mime, media.filename, data_b64=payload)
        if uri.startswith(("https://", "http://")):
            return Media(kind, media.mime_type, media.filename, url=uri)
        if not uri.strip():
            raise ValueError("uri is empty")
        return Media(kind, media.mime_type, media.filename, file_id=uri)
    raise ValueError("needs data or uri")


# --- schemas ----------------------------------------------------------------------------


def struct_to_dict(struct: Any) -> JSON:
    """A Struct as plain JSON, keys sorted; integral numbers come back as ints (minItems etc.).

    A Struct is a map and keeps no key order, so sorting is what makes the
    rendered schema, and the body, the same bytes every time.
    """
    return {key: _value(struct.fields[key]) for key in sorted(struct.fields)}


def _value(value: Any) -> Any:
    which = value.WhichOneof("kind")
    if which == "struct_value":
        return struct_to_dict(value.struct_value)
    if which == "list_value":
        return [_value(v) for v in value.list_value.values]
    if which == "number_value":
        number = value.number_value
        if not math.isfinite(number):
            raise ValueError("numbers must be finite")
        if number.is_integer() and abs(number) < 2**53:
            return int(number)
        return number
    if which == "string_value":
        return value.string_value
    if which == "bool_value":
        return value.bool_value
    return None


def tool_schema(tool: chat_pb2.ToolDefinition) -> JSON:
    """The tool's JSON schema; ValueError unless it is an object schema. Empty means no arguments."""
    if not tool.HasField("parameters") or not tool.parameters.fields:
        return {"type": "object", "properties": {}}
    schema = struct_to_dict(tool.parameters)
    if schema.get("type") != "object":
        raise ValueError('must be an object schema ("type": "object")')
    return schema


# --- reasoning --------------------------------------------------------------------------


def thinking_budget(reasoning: chat_pb2.Reasoning) -> int | None:
    """Budget for budget-based providers: explicit, else from effort; None when not asked for."""
    if reasoning.disabled:
        return None
    if reasoning.HasField("budget_tokens"):
        return reasoning.budget_tokens
    return EFFORT_BUDGET_TOKENS.get(reasoning.effort)


def anthropic_thinking(request: chat_pb2.ChatRequest) -> tuple[int | None, int]:
    """(thinking budget or None, max_tokens) for Anthropic.

    Anthropic needs budget_tokens < max_tokens. An effort-derived budget is
    lowered to fit an explicit max_tokens; without one, max_tokens is the
    default plus the budget, so thinking does not eat the answer.
    """
    budget = thinking_budget(request.reasoning)
    if request.HasField("max_tokens"):
        if budget is not None and not request.reasoning.HasField("budget_tokens"):
            budget = min(budget, request.max_tokens - 1)
        return budget, request.max_tokens
    return budget, DEFAULT_ANTHROPIC_MAX_TOKENS + (budget or 0)
