"""From a provider's response to the entries to append: `entries_of_response`.

    reply = entries_of_response(Provider.PROVIDER_ANTHROPIC_MESSAGES, body, "turn-7", 2)
    reply.entries      # [] or [the assistant entry]: text, tool calls, reasoning; id "turn-7.r2"
    reply.usage        # ProviderUsage (input counts cached tokens too), None when none was reported
    reply.stop         # STOP_END_TURN, STOP_TOOL_USE, STOP_MAX_TOKENS, STOP_REFUSAL, ... ("tool_use", ...)
    reply.not_kept     # paths of what the entry cannot hold (a thinking signature, redacted reasoning)

The same function, with the same answers, is `EntriesOfResponse` in Go, `entries_of_response`
in Rust and `entriesOfResponse` in TypeScript: tests/data/replies holds the responses all four
are tested against. What cannot be mapped raises ReplyError naming its code and path; nothing
is dropped without a word. docs/providers.md says what each provider's fields become.

From a shell: python -m pioneer_grpc.client.reply_cli (reply_cli.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format

from pioneer_grpc.client.reply_json import ERROR_BODY, INVALID_ARGUMENT, ReplyError, parse
from pioneer_grpc.client.reply_shapes import (
    READERS,
    STOP_CONTENT_FILTER,
    STOP_CONTEXT_WINDOW_EXCEEDED,
    STOP_END_TURN,
    STOP_MAX_TOKENS,
    STOP_OTHER,
    STOP_PAUSE_TURN,
    STOP_REFUSAL,
    STOP_STOP_SEQUENCE,
    STOP_TOOL_USE,
    Parts,
    Read,
)
from pioneer_grpc.v1 import history_pb2, usage_pb2

__all__ = [
    "STOP_CONTENT_FILTER",
    "STOP_CONTEXT_WINDOW_EXCEEDED",
    "STOP_END_TURN",
    "STOP_MAX_TOKENS",
    "STOP_OTHER",
    "STOP_PAUSE_TURN",
    "STOP_REFUSAL",
    "STOP_STOP_SEQUENCE",
    "STOP_TOOL_USE",
    "ProviderReply",
    "ReplyError",
    "entries_of_response",
]


@dataclass(frozen=True)
class ProviderReply:
    """What one provider response holds for the thread."""

    # The entries to append: the assistant entry, or none when the reply holds no text and no
    # tool call (a reply stopped by a filter, or by max_tokens inside its reasoning).
    entries: list[history_pb2.ConversationEntry]
    # The usage the provider reported, in ProviderUsage's meaning; None when the response has none.
    usage: usage_pb2.ProviderUsage | None
    # Why the model stopped, one of the STOP_* constants: tool_use whenever it made tool calls and
    # stopped to have them run, refusal whenever it refused (OpenAI's refusal text, Anthropic's
    # stop_reason), other for a reason of the provider's not named here.
    stop: str
    # The provider's own reason as it sent it (stop_reason, finish_reason, status or
    # incomplete_details.reason, finishReason or promptFeedback.blockReason, stopReason).
    provider_stop_reason: str
    # The refusal text OpenAI returns apart from the content; the entry's content when the
    # reply has no other text.
    refusal: str
    # Paths in the response of what the entry cannot hold, in the order read: signatures and
    # redacted or encrypted reasoning, citations and annotations, and when there is no entry,
    # the text and reasoning it would have held.
    not_kept: list[str] = field(default_factory=list)


def entries_of_response(
    provider: int, response: str | bytes | Mapping[str, Any], turn_id: str, round_number: int
) -> ProviderReply:
    """The entries to append for one provider response, its usage and why the model stopped.

    `provider` is the Provider the body was rendered for; `response` the provider's JSON
    response (text, or parsed: an SDK object's dict in the API's own field names). The
    assistant entry's id is `{turn_id}.r{round_number}`: the same reply appended again
    is an idempotent repeat. Raises ReplyError (a ValueError) with `code` and `path`.
    """
    reader = READERS.get(provider)
    if reader is None:
        raise ReplyError(INVALID_ARGUMENT, "", f"provider {provider} is none of the five response shapes")
    if not isinstance(turn_id, str) or not turn_id:
        raise ReplyError(INVALID_ARGUMENT, "", "turn_id is empty: entry ids are made from it")
    if isinstance(round_number, bool) or not isinstance(round_number, int) or round_number < 0:
        raise ReplyError(INVALID_ARGUMENT, "", f"round_number {round_number!r} is not a whole number >= 0")
    body = parse(response)
    error = body.get("error")
    if error is not None:
        raise ReplyError(ERROR_BODY, "error", _error_message(error))
    parts = Parts()
    read = reader(body, parts)
    return _assemble(parts, read, f"{turn_id}.r{round_number}", turn_id)


def _error_message(error: Any) -> str:
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return f"the provider answered an error: {error['message']}"
    return "the provider answered an error"


def _has_text(value: str) -> bool:
    return value.strip(" \t\n\r") != ""


def _assemble(parts: Parts, read: Read, entry_id: str, turn_id: str) -> ProviderReply:
    content = "".join(value for _, value in parts.texts)
    refusal = "".join(parts.refusals)
    not_kept = list(parts.not_kept)
    if not _has_text(content):
        not_kept += [path for path, _ in parts.texts]
        content = refusal
    stop = read.stop
    if refusal:
        stop = STOP_REFUSAL
    elif stop == STOP_END_TURN and parts.calls:
        stop = STOP_TOOL_USE
    entries = []
    if _has_text(content) or parts.calls:
        entry = history_pb2.ConversationEntry(
            entry_id=entry_id,
            turn_id=turn_id,
            role=history_pb2.ENTRY_ROLE_ASSISTANT,
            content=content,
            tool_calls=parts.calls,
        )
        if parts.reasoning:
            entry.reasoning_content = "\n\n".join(value for _, value in parts.reasoning)
        entries.append(entry)
    else:
        not_kept += [path for path, _ in parts.reasoning]
    return ProviderReply(entries, read.usage, stop, read.provider_stop_reason, refusal, not_kept)


def as_json(reply: ProviderReply) -> dict[str, Any]:
    """The reply in JSON: entries and usage in protobuf JSON (the form tests/data/replies holds)."""
    return {
        "entries": [json_format.MessageToDict(entry) for entry in reply.entries],
        "usage": None if reply.usage is None else json_format.MessageToDict(reply.usage),
        "stop": reply.stop,
        "provider_stop_reason": reply.provider_stop_reason,
        "refusal": reply.refusal,
        "not_kept": reply.not_kept,
    }
