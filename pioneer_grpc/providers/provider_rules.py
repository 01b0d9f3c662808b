"""Rules one provider documents and the others do not, decided before rendering.

Rejected (INVALID_ARGUMENT naming the field): what would change the meaning of
the request if adapted.
- Anthropic: tool_choice `any` or a named tool with extended thinking (only
  auto and none are allowed with thinking).
- Anthropic, Gemini: a conversation that starts with an assistant message
  (Anthropic: "first message must use the user role"; Gemini: a function call
  turn must follow a user turn).
- Gemini: a tool name that does not start with a letter or an underscore.

Adapted, each with a notice:
- Every provider: a tool call name in the history outside [A-Za-z0-9_-] (OpenAI
  checks the names of past calls against the tool name pattern) is sent with
  each other character as `_`, in the call and in its result.
- Anthropic: a call id outside [A-Za-z0-9_-] is rewritten, the same way in the
  call and its result; thinking is turned off for a round that continues an
  assistant turn (a tool loop or a prefill), because that turn's signed thinking
  blocks cannot be sent back; tools called in the history are declared (with
  tool_choice none) when the round has no tools, since Anthropic refuses
  tool_use blocks without tool definitions; temperature is not sent; trailing
  whitespace is trimmed from a final assistant message.
- Gemini: parallel_tool_calls=false cannot be expressed and is not sent;
  consecutive assistant messages become one model turn (a function call turn
  must follow a user or function response turn).
- OpenAI Chat Completions: a participant `name` outside [A-Za-z0-9_-] is not sent.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pioneer_grpc.errors import FieldViolation
from pioneer_grpc.providers.common import thinking_budget
from pioneer_grpc.providers.conversation import Notice, Paired, RenderedPrefix
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2

P = provider_service_pb2
NAME_RE = re.compile(r"[A-Za-z0-9_-]+")
ID_RE = NAME_RE
GEMINI_NAME_START_RE = re.compile(r"[A-Za-z_]")
FORCING_CHOICES = {chat_pb2.TOOL_CHOICE_MODE_REQUIRED, chat_pb2.TOOL_CHOICE_MODE_TOOL}
USER_FIRST = {P.PROVIDER_ANTHROPIC_MESSAGES, P.PROVIDER_GEMINI_GENERATE_CONTENT}
HISTORY_TOOL_DESCRIPTION = "Called earlier in this conversation; not available this round."

ID_REWRITTEN = "tool_call_id_rewritten"
THINKING_OFF = "thinking_off_in_tool_loop"
TOOLS_DECLARED = "tools_declared_for_history"
TEMPERATURE_NOT_SENT = "temperature_not_sent"
WHITESPACE_TRIMMED = "trailing_whitespace_trimmed"
PARALLEL_UNSUPPORTED = "parallel_tool_calls_unsupported"
ASSISTANT_MERGED = "assistant_messages_merged"
NAME_DROPPED = "participant_name_dropped"
CALL_NAME_REWRITTEN = "tool_call_name_rewritten"


def anthropic_thinking_on(request: chat_pb2.ChatRequest) -> bool:
    return thinking_budget(request.reasoning) is not None


def request_violations(provider: int, request: chat_pb2.ChatRequest, path: str) -> list[FieldViolation]:
    """Rules on the request's own fields (checked before anything is stored by PrepareTurn)."""
    violations: list[FieldViolation] = []
    if (
        provider == P.PROVIDER_ANTHROPIC_MESSAGES
        and request.tools
        and request.tool_choice.mode in FORCING_CHOICES
        and anthropic_thinking_on(request)
    ):
        violations.append(
            FieldViolation(
                f"{path}.tool_choice.mode",
                "Anthropic allows only auto or none with extended thinking: "
                "turn reasoning off (reasoning.disabled) or let the model choose",
            )
        )
    if provider == P.PROVIDER_GEMINI_GENERATE_CONTENT:
        for i, tool in enumerate(request.tools):
            if tool.name and not GEMINI_NAME_START_RE.match(tool.name):
                violations.append(
                    FieldViolation(f"{path}.tools[{i}].name", "Gemini needs it to start with a letter or _")
                )
    return violations


def message_violations(provider: int, paired: Paired, path: str) -> list[FieldViolation]:
    violations: list[FieldViolation] = []
    if provider in USER_FIRST:
        first = next((m for m in paired.messages if m.role != chat_pb2.CHAT_ROLE_SYSTEM), None)
        if first is not None and first.role == chat_pb2.CHAT_ROLE_ASSISTANT:
            index = paired.origins[paired.messages.index(first)]
            violations.append(
                FieldViolation(
                    f"{path}.messages[{index}].role",
                    "the conversation must start with a user message for this provider",
                )
            )
    return violations


@dataclass
class Adapted:
    """What the provider rules changed: the request to render and the notices saying so."""

    request: chat_pb2.ChatRequest
    notices: list[Notice] = field(default_factory=list)
    history_tools: list[str] = field(default_factory=list)
    # The messages adapted before the request's own (they come first in the conversation).
    prefix: RenderedPrefix | None = None


def _rewritten_id(call_id: str) -> str:
    digest = hashlib.sha256(call_id.encode("utf-8")).hexdigest()[:12]
    return f"{re.sub(r'[^A-Za-z0-9_-]', '_', call_id)[:48]}_{digest}"


def _anthropic_ids(adapted: Adapted, origins: list[int], path: str) -> None:
    if adapted.prefix is not None:
        adapted.notices.extend(adapted.prefix.message_notices)
    renamed: dict[str, str] = {}
    for message, origin in zip(adapted.request.messages, origins, strict=True):
        for j, call in enumerate(message.tool_calls):
            if call.id and not ID_RE.fullmatch(call.id):
                renamed[call.id] = _rewritten_id(call.id)
                adapted.notices.append(
                    Notice(
                        ID_REWRITTEN,
                        f"Anthropic takes call ids of [A-Za-z0-9_-] only: {call.id!r} "
                        f"was sent as {renamed[call.id]!r}",
                        f"{path}.messages[{origin}].tool_calls[{j}].id",
                    )
                )
                call.id = renamed[call.id]
    for message in adapted.request.messages:
        if message.tool_call_id in renamed:
            message.tool_call_id = renamed[message.tool_call_id]


def _continues_assistant_turn(messages: list[chat_pb2.ChatMessage]) -> bool:
    """True when the last user message with text of its own is followed by an assistant message."""
    for message in reversed(messages):
        if message.role == chat_pb2.CHAT_ROLE_ASSISTANT:
            return True
        if message.role == chat_pb2.CHAT_ROLE_USER:
            return False
    return False


def _anthropic(adapted: Adapted, origins: list[int], path: str) -> None:
    request = adapted.request
    _anthropic_ids(adapted, origins, path)
    if anthropic_thinking_on(request) and _continues_assistant_turn(list(request.messages)):
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
    last = request.messages[-1] if request.messages else None
    final_assistant = last is not None and last.role == chat_pb2.CHAT_ROLE_ASSISTANT
    if last is not None and final_assistant and last.content != last.content.rstrip():
        last.content = last.content.rstrip()
        adapted.notices.append(
            Notice(
                WHITESPACE_TRIMMED,
                "Anthropic refuses a final assistant message ending in whitespace",
                f"{path}.messages[{origins[-1]}].content",
            )
        )


def _gemini(adapted: Adapted, origins: list[int], path: str) -> None:
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
    _gemini_merges(adapted, origins, path)


def _gemini_merges(adapted: Adapted, origins: list[int], path: str) -> None:
    if adapted.prefix is not None:
        # A prefix is only continued by a user message: no merge across it.
        adapted.notices.extend(adapted.prefix.message_notices)
    previous = None
    for message, origin in zip(adapted.request.messages, origins, strict=True):
        if message.role == chat_pb2.CHAT_ROLE_SYSTEM:
            continue
        if previous == chat_pb2.CHAT_ROLE_ASSISTANT and message.role == chat_pb2.CHAT_ROLE_ASSISTANT:
            adapted.notices.append(
                Notice(
                    ASSISTANT_MERGED,
                    "sent in one model turn with the assistant message before it "
                    "(Gemini needs a function call turn to follow a user or function response turn)",
                    f"{path}.messages[{origin}]",
                )
            )
        previous = message.role


def _openai_chat(adapted: Adapted, origins: list[int], path: str) -> None:
    if adapted.prefix is not None:
        adapted.notices.extend(adapted.prefix.message_notices)
    for message, origin in zip(adapted.request.messages, origins, strict=True):
        if message.role != chat_pb2.CHAT_ROLE_TOOL and message.name and not NAME_RE.fullmatch(message.name):
            adapted.notices.append(
                Notice(
                    NAME_DROPPED,
                    f"OpenAI takes participant names of [A-Za-z0-9_-] only: {message.name!r} was not sent",
                    f"{path}.messages[{origin}].name",
                )
            )
            message.name = ""


def _call_names(adapted: Adapted, origins: list[int], path: str) -> None:
    if adapted.prefix is not None:
        adapted.notices.extend(adapted.prefix.call_name_notices)
    renamed: dict[str, str] = {}  # call id -> name sent
    for message, origin in zip(adapted.request.messages, origins, strict=True):
        for j, call in enumerate(message.tool_calls):
            if call.name and not NAME_RE.fullmatch(call.name):
                sent = re.sub(r"[^A-Za-z0-9_-]", "_", call.name)
                adapted.notices.append(
                    Notice(
                        CALL_NAME_REWRITTEN,
                        f"tool names are [A-Za-z0-9_-] only: the call to {call.name!r} was sent as {sent!r}",
                        f"{path}.messages[{origin}].tool_calls[{j}].name",
                    )
                )
                renamed[call.id] = call.name = sent
        if message.role == chat_pb2.CHAT_ROLE_TOOL and message.tool_call_id in renamed and message.name:
            message.name = renamed[message.tool_call_id]


ADAPTERS: dict[int, Callable[[Adapted, list[int], str], None]] = {
    P.PROVIDER_ANTHROPIC_MESSAGES: _anthropic,
    P.PROVIDER_GEMINI_GENERATE_CONTENT: _gemini,
    P.PROVIDER_OPENAI_CHAT_COMPLETIONS: _openai_chat,
}
# The part of each adapter that goes message by message and looks at nothing else:
# what the first messages of a conversation get once (adapt_prefix).
MESSAGE_ADAPTERS: dict[int, Callable[[Adapted, list[int], str], None]] = {
    P.PROVIDER_ANTHROPIC_MESSAGES: _anthropic_ids,
    P.PROVIDER_GEMINI_GENERATE_CONTENT: _gemini_merges,
    P.PROVIDER_OPENAI_CHAT_COMPLETIONS: _openai_chat,
}


def tools_called(messages: Iterable[chat_pb2.ChatMessage]) -> dict[str, None]:
    """Names of the tools called, in order of first call, that can be declared as tools."""
    return {c.name: None for m in messages for c in m.tool_calls if NAME_RE.fullmatch(c.name)}


def has_tool_results(messages: Iterable[chat_pb2.ChatMessage]) -> bool:
    return any(m.role == chat_pb2.CHAT_ROLE_TOOL for m in messages)


def _without_messages(request: chat_pb2.ChatRequest) -> chat_pb2.ChatRequest:
    """A copy of every field but `messages`, which hold nearly all of a large request's bytes:
    copying them only to drop them would be one long C call."""
    copy = chat_pb2.ChatRequest()
    for descriptor, value in request.ListFields():
        if descriptor.name == "messages":
            continue
        if descriptor.is_repeated:
            getattr(copy, descriptor.name).extend(value)
        elif descriptor.message_type is not None:
            getattr(copy, descriptor.name).CopyFrom(value)
        else:
            setattr(copy, descriptor.name, value)
    return copy


def adapt(
    provider: int,
    request: chat_pb2.ChatRequest,
    paired: Paired,
    path: str,
    prefix: RenderedPrefix | None = None,
) -> Adapted:
    """A copy of the request with the paired messages, changed where the provider needs it.

    With `prefix`, the messages are those after it: its notices come first in each
    stage, and the rules that look at the whole conversation count its messages too.
    """
    copy = _without_messages(request)
    for message in paired.messages:
        copy.messages.add().CopyFrom(message)
    adapted = Adapted(copy, prefix=prefix)
    _call_names(adapted, paired.origins, path)
    adapter = ADAPTERS.get(provider)
    if adapter is not None:
        adapter(adapted, paired.origins, path)
    return adapted


def adapt_prefix(
    provider: int, request: chat_pb2.ChatRequest, paired: Paired, path: str
) -> tuple[Adapted, list[Notice], list[Notice]]:
    """The message-by-message adaptations of `adapt` alone, for the first messages of a conversation.

    The adapted messages, then the notices of each stage (call names, the provider's).
    """
    adapted = adapt(P.PROVIDER_UNSPECIFIED, request, paired, path)
    call_name_notices = list(adapted.notices)
    adapted.notices.clear()
    adapter = MESSAGE_ADAPTERS.get(provider)
    if adapter is not None:
        adapter(adapted, paired.origins, path)
    return adapted, call_name_notices, list(adapted.notices)
