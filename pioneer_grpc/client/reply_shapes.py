"""The five response shapes `entries_of_response` reads, one reader each, and what they share.

Each reader takes the response (a JSON object) and the Parts it fills (texts, reasoning, tool
calls, refusals, what is not kept, each with its path), and returns the provider's stop reason,
the normalized one and the usage. replies.py makes the entry of the parts; docs/providers.md
says, provider by provider, what each field becomes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pioneer_grpc.client.reply_json import (
    ERROR_BODY,
    MISSING,
    UNSUPPORTED,
    ReplyError,
    arguments_object,
    arguments_text,
    array,
    checked_sum,
    child,
    count,
    item,
    name,
    obj,
    opt_array,
    opt_obj,
    opt_text,
    text,
    utf16_order,
)
from pioneer_grpc.v1 import common_pb2, provider_service_pb2, usage_pb2

P = provider_service_pb2

# What stopped the model, in one vocabulary for every provider (ProviderReply.stop).
STOP_END_TURN = "end_turn"
STOP_TOOL_USE = "tool_use"
STOP_MAX_TOKENS = "max_tokens"
STOP_STOP_SEQUENCE = "stop_sequence"
STOP_PAUSE_TURN = "pause_turn"
STOP_REFUSAL = "refusal"
STOP_CONTENT_FILTER = "content_filter"
STOP_CONTEXT_WINDOW_EXCEEDED = "context_window_exceeded"
STOP_OTHER = "other"


@dataclass
class Parts:
    texts: list[tuple[str, str]] = field(default_factory=list)
    reasoning: list[tuple[str, str]] = field(default_factory=list)
    calls: list[common_pb2.ToolCall] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    not_kept: list[str] = field(default_factory=list)

    def text(self, path: str, value: str | None) -> None:
        if value:
            self.texts.append((path, value))

    def think(self, path: str, value: str | None) -> None:
        if value:
            self.reasoning.append((path, value))

    def call(self, call_id: str, call_name: str, arguments: str) -> None:
        self.calls.append(common_pb2.ToolCall(id=call_id, name=call_name, arguments=arguments))

    def drop_if(self, present: Any, path: str) -> None:
        if present:
            self.not_kept.append(path)


@dataclass(frozen=True)
class Read:
    provider_stop_reason: str
    stop: str
    usage: usage_pb2.ProviderUsage | None


def make_usage(
    path: str,
    inputs: list[int | None],
    read: int | None,
    write: int | None,
    outputs: list[int | None],
    reasoning: int | None,
) -> usage_pb2.ProviderUsage:
    usage = usage_pb2.ProviderUsage(
        input_tokens=checked_sum(path, *inputs), output_tokens=checked_sum(path, *outputs)
    )
    if read is not None:
        usage.cache_read_input_tokens = read
    if write is not None:
        usage.cache_write_input_tokens = write
    if reasoning is not None:
        usage.reasoning_output_tokens = reasoning
    return usage


def _first_key(block: Mapping[str, Any], ignored: frozenset[str] = frozenset()) -> str | None:
    """The first key holding a value, in sorted order (so every client names the same one)."""
    keys = sorted((k for k, v in block.items() if v is not None and k not in ignored), key=utf16_order)
    return keys[0] if keys else None


def _unsupported(path: str, what: str) -> ReplyError:
    return ReplyError(UNSUPPORTED, path, f"{what}: no entry holds it")


# --- Anthropic Messages --------------------------------------------------------------------------

_ANTHROPIC_STOPS = {
    "end_turn": STOP_END_TURN,
    "tool_use": STOP_TOOL_USE,
    "max_tokens": STOP_MAX_TOKENS,
    "stop_sequence": STOP_STOP_SEQUENCE,
    "pause_turn": STOP_PAUSE_TURN,
    "refusal": STOP_REFUSAL,
    "model_context_window_exceeded": STOP_CONTEXT_WINDOW_EXCEEDED,
}


def _anthropic_block(block: Mapping[str, Any], path: str, parts: Parts) -> None:
    kind = name(block, "type", path)
    if kind == "text":
        parts.text(child(path, "text"), text(block, "text", path))
        parts.drop_if(opt_array(block, "citations", path), child(path, "citations"))
    elif kind == "thinking":
        parts.think(child(path, "thinking"), text(block, "thinking", path))
        parts.drop_if(opt_text(block, "signature", path), child(path, "signature"))
    elif kind == "redacted_thinking":
        parts.not_kept.append(path)
    elif kind == "tool_use":
        arguments = arguments_object(block.get("input"), child(path, "input"))
        parts.call(name(block, "id", path), name(block, "name", path), arguments)
    else:
        raise _unsupported(child(path, "type"), f"a {kind!r} block")


def _anthropic(body: Mapping[str, Any], parts: Parts) -> Read:
    blocks = array(body, "content", "")
    for i in range(len(blocks)):
        _anthropic_block(item(blocks, i, "content"), child("content", i), parts)
    reason = opt_text(body, "stop_reason", "") or ""
    usage = opt_obj(body, "usage", "")
    found = None
    if usage is not None:
        fresh, read, write = (
            count(usage, key, "usage")
            for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        )
        details = opt_obj(usage, "output_tokens_details", "usage")
        thinking = count(details, "thinking_tokens", "usage.output_tokens_details")
        found = make_usage(
            "usage", [fresh, read, write], read, write, [count(usage, "output_tokens", "usage")], thinking
        )
    return Read(reason, _ANTHROPIC_STOPS.get(reason, STOP_OTHER), found)


# --- OpenAI Chat Completions ---------------------------------------------------------------------

_CHAT_STOPS = {
    "stop": STOP_END_TURN,
    "tool_calls": STOP_TOOL_USE,
    "function_call": STOP_TOOL_USE,
    "length": STOP_MAX_TOKENS,
    "content_filter": STOP_CONTENT_FILTER,
}


def _only_choice(items: list[Any], key: str) -> Mapping[str, Any]:
    if not items:
        raise ReplyError(MISSING, key, "empty")
    if len(items) > 1:
        raise _unsupported(child(key, 1), f"{len(items)} {key}: one reply is one of them (ask for one)")
    return item(items, 0, key)


def _chat_call(call: Mapping[str, Any], path: str, parts: Parts) -> None:
    kind = opt_text(call, "type", path) or "function"
    if kind != "function":
        raise _unsupported(child(path, "type"), f"a {kind!r} tool call")
    function = obj(call, "function", path)
    fpath = child(path, "function")
    arguments = arguments_text(function.get("arguments"), child(fpath, "arguments"))
    parts.call(name(call, "id", path), name(function, "name", fpath), arguments)


def _openai_chat(body: Mapping[str, Any], parts: Parts) -> Read:
    choice = _only_choice(array(body, "choices", ""), "choices")
    message = obj(choice, "message", "choices[0]")
    path = "choices[0].message"
    parts.text(child(path, "content"), opt_text(message, "content", path))
    refusal = opt_text(message, "refusal", path)
    if refusal:
        parts.refusals.append(refusal)
    for key in ("audio", "function_call"):
        if message.get(key) is not None:
            raise _unsupported(child(path, key), f"a message's {key}")
    parts.drop_if(opt_array(message, "annotations", path), child(path, "annotations"))
    calls = opt_array(message, "tool_calls", path)
    for j in range(len(calls)):
        _chat_call(item(calls, j, child(path, "tool_calls")), child(child(path, "tool_calls"), j), parts)
    reason = opt_text(choice, "finish_reason", "choices[0]") or ""
    usage = opt_obj(body, "usage", "")
    found = None
    if usage is not None:
        prompt = opt_obj(usage, "prompt_tokens_details", "usage")
        completion = opt_obj(usage, "completion_tokens_details", "usage")
        found = make_usage(
            "usage",
            [count(usage, "prompt_tokens", "usage")],
            count(prompt, "cached_tokens", "usage.prompt_tokens_details"),
            count(prompt, "cache_write_tokens", "usage.prompt_tokens_details"),
            [count(usage, "completion_tokens", "usage")],
            count(completion, "reasoning_tokens", "usage.completion_tokens_details"),
        )
    return Read(reason, _CHAT_STOPS.get(reason, STOP_OTHER), found)


# --- OpenAI Responses ----------------------------------------------------------------------------

_UNFINISHED = ("in_progress", "queued", "cancelled")
_INCOMPLETE_STOPS = {"max_output_tokens": STOP_MAX_TOKENS, "content_filter": STOP_CONTENT_FILTER}


def _responses_message(message: Mapping[str, Any], path: str, parts: Parts) -> None:
    content = array(message, "content", path)
    for j in range(len(content)):
        ppath = child(child(path, "content"), j)
        part = item(content, j, child(path, "content"))
        kind = name(part, "type", ppath)
        if kind == "output_text":
            parts.text(child(ppath, "text"), text(part, "text", ppath))
            parts.drop_if(opt_array(part, "annotations", ppath), child(ppath, "annotations"))
        elif kind == "refusal":
            parts.refusals.append(text(part, "refusal", ppath) or "")
        else:
            raise _unsupported(child(ppath, "type"), f"a {kind!r} content part")


def _responses_reasoning(reasoning: Mapping[str, Any], path: str, parts: Parts) -> None:
    # The reasoning text itself when the model returns it, else its summary.
    for key, kind in (("content", "reasoning_text"), ("summary", "summary_text")):
        pieces = opt_array(reasoning, key, path)
        for j in range(len(pieces)):
            ppath = child(child(path, key), j)
            piece = item(pieces, j, child(path, key))
            if name(piece, "type", ppath) != kind:
                raise _unsupported(child(ppath, "type"), f"a {piece['type']!r} reasoning part")
            parts.think(child(ppath, "text"), text(piece, "text", ppath))
        if pieces:
            break
    parts.drop_if(opt_text(reasoning, "encrypted_content", path), child(path, "encrypted_content"))


def _responses_item(output: Mapping[str, Any], path: str, parts: Parts) -> None:
    kind = name(output, "type", path)
    if kind == "message":
        _responses_message(output, path, parts)
    elif kind == "function_call":
        arguments = arguments_text(output.get("arguments"), child(path, "arguments"))
        parts.call(name(output, "call_id", path), name(output, "name", path), arguments)
    elif kind == "reasoning":
        _responses_reasoning(output, path, parts)
    else:
        raise _unsupported(child(path, "type"), f"a {kind!r} output item")


def _openai_responses(body: Mapping[str, Any], parts: Parts) -> Read:
    status = opt_text(body, "status", "") or ""
    if status == "failed":
        raise ReplyError(ERROR_BODY, "status", "the response failed")
    if status in _UNFINISHED:
        raise _unsupported("status", f"a response {status}, not finished")
    outputs = array(body, "output", "")
    for i in range(len(outputs)):
        _responses_item(item(outputs, i, "output"), child("output", i), parts)
    reason, stop = status, (STOP_END_TURN if status == "completed" else STOP_OTHER)
    if status == "incomplete":
        details = opt_obj(body, "incomplete_details", "")
        reason = opt_text(details, "reason", "incomplete_details") or status
        stop = _INCOMPLETE_STOPS.get(reason, STOP_OTHER)
    usage = opt_obj(body, "usage", "")
    found = None
    if usage is not None:
        given = opt_obj(usage, "input_tokens_details", "usage")
        taken = opt_obj(usage, "output_tokens_details", "usage")
        found = make_usage(
            "usage",
            [count(usage, "input_tokens", "usage")],
            count(given, "cached_tokens", "usage.input_tokens_details"),
            count(given, "cache_write_tokens", "usage.input_tokens_details"),
            [count(usage, "output_tokens", "usage")],
            count(taken, "reasoning_tokens", "usage.output_tokens_details"),
        )
    return Read(reason, stop, found)


# --- Gemini generateContent ----------------------------------------------------------------------

_GEMINI_FILTERS = (
    "SAFETY RECITATION BLOCKLIST PROHIBITED_CONTENT SPII IMAGE_SAFETY IMAGE_PROHIBITED_CONTENT "
    "IMAGE_RECITATION MODEL_ARMOR"
).split()
_GEMINI_STOPS = {
    "STOP": STOP_END_TURN,
    "MAX_TOKENS": STOP_MAX_TOKENS,
    **dict.fromkeys(_GEMINI_FILTERS, STOP_CONTENT_FILTER),
}
# Keys of a part that say something about its data but are none: they are neither kept nor refused.
_GEMINI_PART_META = frozenset(
    {"thought", "thoughtSignature", "partMetadata", "videoMetadata", "mediaResolution"}
)


def _gemini_part(part: Mapping[str, Any], path: str, parts: Parts) -> None:
    parts.drop_if(opt_text(part, "thoughtSignature", path), child(path, "thoughtSignature"))
    call = opt_obj(part, "functionCall", path)
    if call is not None:
        cpath = child(path, "functionCall")
        # Gemini may leave the id out (it pairs results by order): the n-th call of the reply is call_n.
        call_id = opt_text(call, "id", cpath) or f"call_{len(parts.calls)}"
        args = call.get("args")
        arguments = "{}" if args is None else arguments_object(args, child(cpath, "args"))
        parts.call(call_id, name(call, "name", cpath), arguments)
        return
    value = opt_text(part, "text", path)
    if value is not None:
        if part.get("thought") is True:
            parts.think(child(path, "text"), value)
        else:
            parts.text(child(path, "text"), value)
        return
    other = _first_key(part, _GEMINI_PART_META)
    if other is not None:
        raise _unsupported(child(path, other), f"a part's {other}")


def _gemini_usage(body: Mapping[str, Any]) -> usage_pb2.ProviderUsage | None:
    usage = opt_obj(body, "usageMetadata", "")
    if usage is None:
        return None
    p = "usageMetadata"
    thoughts = count(usage, "thoughtsTokenCount", p)
    return make_usage(
        p,
        [count(usage, "promptTokenCount", p), count(usage, "toolUsePromptTokenCount", p)],
        count(usage, "cachedContentTokenCount", p) or 0,
        None,
        [count(usage, "candidatesTokenCount", p), thoughts],
        thoughts,
    )


def _gemini(body: Mapping[str, Any], parts: Parts) -> Read:
    candidates = opt_array(body, "candidates", "")
    if not candidates:
        feedback = opt_obj(body, "promptFeedback", "")
        blocked = opt_text(feedback, "blockReason", "promptFeedback")
        if not blocked:
            raise ReplyError(MISSING, "candidates", "no candidate, and no promptFeedback.blockReason")
        return Read(blocked, STOP_CONTENT_FILTER, _gemini_usage(body))
    candidate = _only_choice(candidates, "candidates")
    content = opt_obj(candidate, "content", "candidates[0]")
    if content is not None:
        path = "candidates[0].content.parts"
        found = opt_array(content, "parts", "candidates[0].content")
        for i in range(len(found)):
            _gemini_part(item(found, i, path), child(path, i), parts)
    reason = opt_text(candidate, "finishReason", "candidates[0]") or ""
    return Read(reason, _GEMINI_STOPS.get(reason, STOP_OTHER), _gemini_usage(body))


# --- Amazon Bedrock Converse ---------------------------------------------------------------------

_BEDROCK_STOPS = {
    "end_turn": STOP_END_TURN,
    "tool_use": STOP_TOOL_USE,
    "max_tokens": STOP_MAX_TOKENS,
    "stop_sequence": STOP_STOP_SEQUENCE,
    "guardrail_intervened": STOP_CONTENT_FILTER,
    "content_filtered": STOP_CONTENT_FILTER,
    "model_context_window_exceeded": STOP_CONTEXT_WINDOW_EXCEEDED,
}


def _bedrock_reasoning(block: Mapping[str, Any], path: str, parts: Parts) -> None:
    reasoning = obj(block, "reasoningContent", path)
    rpath = child(path, "reasoningContent")
    reasoning_text = opt_obj(reasoning, "reasoningText", rpath)
    if reasoning_text is not None:
        tpath = child(rpath, "reasoningText")
        parts.think(child(tpath, "text"), text(reasoning_text, "text", tpath))
        parts.drop_if(opt_text(reasoning_text, "signature", tpath), child(tpath, "signature"))
    elif reasoning.get("redactedContent") is not None:
        parts.not_kept.append(child(rpath, "redactedContent"))
    else:
        raise ReplyError(MISSING, child(rpath, "reasoningText"), "absent, and no redactedContent")


def _bedrock_block(block: Mapping[str, Any], path: str, parts: Parts) -> None:
    if block.get("text") is not None:
        parts.text(child(path, "text"), text(block, "text", path))
    elif block.get("toolUse") is not None:
        use = obj(block, "toolUse", path)
        upath = child(path, "toolUse")
        arguments = arguments_object(use.get("input"), child(upath, "input"))
        parts.call(name(use, "toolUseId", upath), name(use, "name", upath), arguments)
    elif block.get("reasoningContent") is not None:
        _bedrock_reasoning(block, path, parts)
    else:
        other = _first_key(block)
        if other is None:
            raise ReplyError(MISSING, path, "an empty content block")
        raise _unsupported(child(path, other), f"a {other!r} block")


def _bedrock(body: Mapping[str, Any], parts: Parts) -> Read:
    if body.get("output") is None and isinstance(body.get("message"), str):
        raise ReplyError(ERROR_BODY, "message", f"the provider answered an error: {body['message']}")
    output = obj(body, "output", "")
    message = obj(output, "message", "output")
    blocks = array(message, "content", "output.message")
    for i in range(len(blocks)):
        _bedrock_block(item(blocks, i, "output.message.content"), child("output.message.content", i), parts)
    reason = opt_text(body, "stopReason", "") or ""
    usage = opt_obj(body, "usage", "")
    found = None
    if usage is not None:
        fresh, read, write = (
            count(usage, key, "usage")
            for key in ("inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")
        )
        found = make_usage(
            "usage", [fresh, read, write], read, write, [count(usage, "outputTokens", "usage")], None
        )
    return Read(reason, _BEDROCK_STOPS.get(reason, STOP_OTHER), found)


READERS: dict[int, Callable[[Mapping[str, Any], Parts], Read]] = {
    P.PROVIDER_ANTHROPIC_MESSAGES: _anthropic,
    P.PROVIDER_OPENAI_CHAT_COMPLETIONS: _openai_chat,
    P.PROVIDER_OPENAI_RESPONSES: _openai_responses,
    P.PROVIDER_GEMINI_GENERATE_CONTENT: _gemini,
    P.PROVIDER_AMAZON_BEDROCK_CONVERSE: _bedrock,
}
