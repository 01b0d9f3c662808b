"""The stages of provider rules every provider goes through, decided before rendering.

What one provider documents and the others do not lives in that provider's module
of providers/apis/ (its `request_rules`, `adapt` and `adapt_messages`, named by its
SPEC) with the notices it gives; this module runs them in order and holds the
stages and helpers several providers share.

Rejected (INVALID_ARGUMENT naming the field): what would change the meaning of
the request if adapted.
- Every provider whose spec says `user_first`: a conversation that starts with an
  assistant message (`message_violations`).

Adapted, each with a notice:
- Every provider: a tool call name in the history outside the provider's tool name
  pattern (OpenAI checks the names of past calls against it) is sent with each
  other character as `_`, in the call and in its result; one longer than the
  provider's limit is cut to fit, ending in `_` and 12 hex digits of the full
  name's SHA-256 (`_sent_call_name`). (A request's own tool over the limit is
  rejected: the caller can rename it; a call the model made earlier cannot be.)
- Every provider whose spec says so: a call id outside its pattern, or used again
  where ids must be unique in the conversation, is rewritten, the same way in the
  call and its result (`_call_ids`); a participant name, reasoning text, a later
  system message, an error mark or media a tool result cannot carry, each as the
  spec says (`_message_notices`, `_result_notices`).
- Shared by the providers' own rules: trailing whitespace trimmed from a final
  assistant message (`trim_final_assistant`: Anthropic, Bedrock), a notice on each
  assistant message sent as one with the one before it (`assistant_merges`: Gemini,
  Bedrock), the tools called in the history (`tools_called`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from pioneer_grpc.errors import FieldViolation
from pioneer_grpc.providers import model_fit
from pioneer_grpc.providers.common import media_of
from pioneer_grpc.providers.conversation import Notice, Paired, RenderedPrefix
from pioneer_grpc.providers.model_fit import ModelFit
from pioneer_grpc.providers.spec import PLAIN_NAME, ProviderSpec
from pioneer_grpc.v1 import chat_pb2

NAME_RE = PLAIN_NAME
FORCING_CHOICES = {chat_pb2.TOOL_CHOICE_MODE_REQUIRED, chat_pb2.TOOL_CHOICE_MODE_TOOL}
HISTORY_TOOL_DESCRIPTION = "Called earlier in this conversation; not available this round."
# Hex digits of a name's SHA-256 that end a history call name cut to the provider's limit.
NAME_DIGEST_CHARS = 12

ID_REWRITTEN = "tool_call_id_rewritten"
TOOLS_DECLARED = "tools_declared_for_history"
TEMPERATURE_NOT_SENT = model_fit.TEMPERATURE_NOT_SENT
WHITESPACE_TRIMMED = "trailing_whitespace_trimmed"
PARALLEL_UNSUPPORTED = "parallel_tool_calls_unsupported"
ASSISTANT_MERGED = "assistant_messages_merged"
NAME_DROPPED = "participant_name_dropped"
CALL_NAME_REWRITTEN = "tool_call_name_rewritten"
ERROR_IN_CONTENT = "tool_error_in_content"
SYSTEM_MOVED = "system_message_moved"
SYSTEM_MERGED = "system_message_merged"
REASONING_CONTENT_NOT_SENT = "reasoning_content_not_sent"
RESULT_MEDIA_MOVED = "tool_result_media_moved"


def request_violations(
    spec: ProviderSpec, request: chat_pb2.ChatRequest, path: str, *, reasoning: bool = True
) -> list[FieldViolation]:
    """Rules on the request's own fields (checked before anything is stored by PrepareTurn).

    `reasoning`: whether the model thinks at all (else its reasoning settings are not sent).
    """
    return spec.request_rules(request, path, reasoning) if spec.request_rules is not None else []


def message_violations(spec: ProviderSpec, paired: Paired, path: str) -> list[FieldViolation]:
    violations: list[FieldViolation] = []
    if spec.user_first:
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
    spec: ProviderSpec | None = None
    notices: list[Notice] = field(default_factory=list)
    history_tools: list[str] = field(default_factory=list)
    # The messages adapted before the request's own (they come first in the conversation).
    prefix: RenderedPrefix | None = None
    # How often each call id (as given) was used so far (the prefix's uses included).
    id_uses: dict[str, int] = field(default_factory=dict)


def _rewritten_id(call_id: str, max_chars: int | None) -> str:
    digest = hashlib.sha256(call_id.encode("utf-8")).hexdigest()[:12]
    keep = 48 if max_chars is None else max(0, min(48, max_chars - 13))
    return f"{re.sub(r'[^A-Za-z0-9_-]', '_', call_id)[:keep]}_{digest}"


def _call_ids(adapted: Adapted, origins: list[int], path: str) -> None:
    """Call ids as the provider takes them: of its pattern, and unique in the conversation where it says so.

    (And the notices of what of each message the provider does not take as it is:
    the stage that goes message by message for every provider.)

    A model may reuse an id once its call is answered (`call_0` every turn); where the
    provider needs ids unique in the conversation, each reuse is sent as an id of its own,
    the same in the call and in its result. The rewrite depends only on the id and how
    often it was used before, so every round sends the same ids.
    """
    spec = adapted.spec
    assert spec is not None
    if adapted.prefix is not None:
        adapted.notices.extend(adapted.prefix.call_id_notices)
        adapted.id_uses.update(adapted.prefix.call_id_uses)
    sent: dict[str, str] = {}  # id as given -> id sent, for the call last made with it
    # Whether a message other than a system one came before (in the prefix, or here).
    started = adapted.prefix is not None
    for message, origin in zip(adapted.request.messages, origins, strict=True):
        _message_notices(spec, message, f"{path}.messages[{origin}]", started, adapted.notices)
        started = started or message.role != chat_pb2.CHAT_ROLE_SYSTEM
        if message.role == chat_pb2.CHAT_ROLE_TOOL:
            _result_notices(spec, message, f"{path}.messages[{origin}]", adapted.notices)
            if message.tool_call_id in sent:
                message.tool_call_id = sent[message.tool_call_id]
        for j, call in enumerate(message.tool_calls):
            if not call.id:
                continue
            uses = adapted.id_uses.get(call.id, 0)
            adapted.id_uses[call.id] = uses + 1
            new, why = call.id, ""
            if spec.unique_call_ids and uses:
                new = _rewritten_id(f"{call.id}#{uses + 1}", spec.max_call_id_chars)
                why = f"{spec.name} needs call ids unique in the conversation: {call.id!r} is used again"
            elif (spec.call_id is not None and not spec.call_id.fullmatch(call.id)) or (
                spec.max_call_id_chars is not None and len(call.id) > spec.max_call_id_chars
            ):
                new = _rewritten_id(call.id, spec.max_call_id_chars)
                why = f"{spec.name} takes call ids of {spec.call_id.pattern if spec.call_id else 'any'}"
                if spec.max_call_id_chars is not None:
                    why += f", at most {spec.max_call_id_chars} characters"
                why += f": {call.id!r} is not one"
            if new != call.id:
                adapted.notices.append(
                    Notice(
                        ID_REWRITTEN,
                        f"{why}; it was sent as {new!r} (in the call and in its result)",
                        f"{path}.messages[{origin}].tool_calls[{j}].id",
                    )
                )
            sent[call.id] = new
            call.id = new


def _message_notices(
    spec: ProviderSpec, message: chat_pb2.ChatMessage, field: str, started: bool, notices: list[Notice]
) -> None:
    """What of a message the provider does not take as it is: a name, its reasoning, its place."""
    role = message.role
    if message.name and role != chat_pb2.CHAT_ROLE_TOOL and not spec.participant_names:
        notices.append(
            Notice(
                NAME_DROPPED,
                f"{spec.name} takes no participant name: {message.name!r} was not sent",
                f"{field}.name",
            )
        )
    if message.HasField("reasoning_content"):
        notices.append(
            Notice(
                REASONING_CONTENT_NOT_SENT,
                "reasoning text is not sent back to a model (no provider takes it as plain text)",
                f"{field}.reasoning_content",
            )
        )
    if role == chat_pb2.CHAT_ROLE_SYSTEM and started and spec.system_apart:
        notices.append(
            Notice(
                SYSTEM_MOVED,
                f"{spec.name} takes system text apart from the conversation: this system message was sent "
                "there, after the system text before it, not at its place in the conversation",
                field,
            )
        )


def _result_notices(
    spec: ProviderSpec, message: chat_pb2.ChatMessage, field: str, notices: list[Notice]
) -> None:
    """What of a tool result the provider cannot take inside it: the error mark, media kinds.

    Only media sent is here: what the model does not read was left out before (model_fit.apply;
    a rendered prefix serves only a model that reads every kind of its media: render.render_after).
    """
    if message.is_error and not spec.tool_result_error:
        notices.append(
            Notice(
                ERROR_IN_CONTENT,
                f"{spec.name} has no field marking a tool result as an error: {spec.tool_error_in_content}",
                f"{field}.is_error",
            )
        )
    for j, part in enumerate(message.content_parts):
        found = media_of(part)
        if found is not None and found[0] not in spec.tool_result_media:
            notices.append(
                Notice(
                    RESULT_MEDIA_MOVED,
                    f"{spec.name} takes no {found[0]} in a tool result: it was sent in a user message "
                    "right after the results of the call's turn",
                    f"{field}.content_parts[{j}].{found[0]}",
                )
            )


def trim_final_assistant(adapted: Adapted, origins: list[int], path: str, why: str) -> None:
    """Trailing whitespace off the text a final assistant message ends with, with a notice per
    field trimmed: its last text part with text, or `content` (parts follow it when sent)."""
    last = adapted.request.messages[-1] if adapted.request.messages else None
    if last is None or last.role != chat_pb2.CHAT_ROLE_ASSISTANT:
        return
    field = f"{path}.messages[{origins[-1]}]"
    for j in reversed(range(len(last.content_parts))):
        part = last.content_parts[j]
        if not part.text:
            continue
        trimmed = part.text.rstrip()
        if trimmed != part.text:
            part.text = trimmed
            adapted.notices.append(Notice(WHITESPACE_TRIMMED, why, f"{field}.content_parts[{j}].text"))
        if trimmed:
            return
    if last.content != last.content.rstrip():
        last.content = last.content.rstrip()
        adapted.notices.append(Notice(WHITESPACE_TRIMMED, why, f"{field}.content"))


def assistant_merges(adapted: Adapted, origins: list[int], path: str, why: str) -> None:
    """A notice on each assistant message sent as one with the assistant message before it.

    No merge reaches across a prefix: a prefix is only continued by a user message.
    """
    if adapted.prefix is not None:
        adapted.notices.extend(adapted.prefix.message_notices)
    previous = None
    for message, origin in zip(adapted.request.messages, origins, strict=True):
        if message.role == chat_pb2.CHAT_ROLE_SYSTEM:
            continue
        if previous == chat_pb2.CHAT_ROLE_ASSISTANT and message.role == chat_pb2.CHAT_ROLE_ASSISTANT:
            adapted.notices.append(Notice(ASSISTANT_MERGED, why, f"{path}.messages[{origin}]"))
        previous = message.role


def _sent_call_name(name: str, chars: str, max_chars: int) -> str:
    """A history call's name as the provider takes it: of `chars`, at most `max_chars` long.

    It depends on the name alone, so every round (and a prefix rendered once) sends
    the same name; a name cut to fit ends in a digest of the whole name, so two
    names sharing their first characters stay distinct.
    """
    sent = re.sub(f"[^{chars}]", "_", name)
    if len(sent) > max_chars:
        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:NAME_DIGEST_CHARS]
        sent = f"{sent[: max_chars - NAME_DIGEST_CHARS - 1]}_{digest}"
    return sent


def sent_call_name(spec: ProviderSpec, name: str) -> str:
    """A history call's name as `_call_names` sends it to the provider of `spec`."""
    return _sent_call_name(name, spec.tool_name_chars, spec.max_tool_name_chars) if name else name


def _call_names(adapted: Adapted, origins: list[int], path: str) -> None:
    if adapted.prefix is not None:
        adapted.notices.extend(adapted.prefix.call_name_notices)
    spec = adapted.spec
    chars = spec.tool_name_chars if spec is not None else "A-Za-z0-9_-"
    max_chars = spec.max_tool_name_chars if spec is not None else 64
    pattern = re.compile(f"[{chars}]+")
    sent_names: dict[str, str] = {}  # call id -> name sent, for the call last made with it
    for message, origin in zip(adapted.request.messages, origins, strict=True):
        if message.role == chat_pb2.CHAT_ROLE_TOOL and message.tool_call_id in sent_names and message.name:
            message.name = sent_names[message.tool_call_id]
        for j, call in enumerate(message.tool_calls):
            sent = call.name
            if call.name:
                sent = _sent_call_name(call.name, chars, max_chars)
            if sent != call.name:
                rules = []
                if not pattern.fullmatch(call.name):
                    rules.append(f"[{chars}] only")
                if len(call.name) > max_chars:
                    rules.append(f"at most {max_chars} characters")
                adapted.notices.append(
                    Notice(
                        CALL_NAME_REWRITTEN,
                        f"tool names are {', '.join(rules)}: the call to {call.name!r} was sent as {sent!r}",
                        f"{path}.messages[{origin}].tool_calls[{j}].name",
                    )
                )
                call.name = sent
            sent_names[call.id] = sent


def tools_called(messages: Iterable[chat_pb2.ChatMessage]) -> dict[str, None]:
    """Names of the tools called, in order of first call, that can be declared as tools."""
    return {c.name: None for m in messages for c in m.tool_calls if NAME_RE.fullmatch(c.name)}


def has_tool_results(messages: Iterable[chat_pb2.ChatMessage]) -> bool:
    return any(m.role == chat_pb2.CHAT_ROLE_TOOL for m in messages)


def without_fields(
    request: chat_pb2.ChatRequest, names: tuple[str, ...] = ("messages",)
) -> chat_pb2.ChatRequest:
    """A copy of every field but `names` (the messages hold nearly all of a large request's bytes:
    copying them only to drop them would be one long C call)."""
    copy = chat_pb2.ChatRequest()
    for descriptor, value in request.ListFields():
        if descriptor.name in names:
            continue
        if descriptor.is_repeated:
            getattr(copy, descriptor.name).extend(value)
        elif descriptor.message_type is not None:
            getattr(copy, descriptor.name).CopyFrom(value)
        else:
            setattr(copy, descriptor.name, value)
    return copy


def adapt(
    spec: ProviderSpec,
    request: chat_pb2.ChatRequest,
    paired: Paired,
    path: str,
    prefix: RenderedPrefix | None = None,
    *,
    names_only: bool = False,
    fit: ModelFit | None = None,
) -> Adapted:
    """A copy of the request with the paired messages, changed where the provider needs it.

    With `prefix`, the messages are those after it: its notices come first in each
    stage, and the rules that look at the whole conversation count its messages too.
    `names_only`: the first stage alone (call names).
    """
    copy = without_fields(request)
    for message in paired.messages:
        copy.messages.add().CopyFrom(message)
    adapted = Adapted(copy, spec=spec, prefix=prefix)
    _call_names(adapted, paired.origins, path)
    if names_only:
        return adapted
    if fit is not None:
        # Before the rules on tool results: a media part the model does not read is a line of
        # text by then, which stays in the result (one notice, media_not_sent), not media moved.
        adapted.notices.extend(model_fit.apply(fit, adapted.request, paired.origins, path))
    _call_ids(adapted, paired.origins, path)
    if spec.adapt is not None:
        spec.adapt(adapted, paired.origins, path)
    return adapted


def adapt_prefix(
    spec: ProviderSpec,
    request: chat_pb2.ChatRequest,
    paired: Paired,
    path: str,
    prefix: RenderedPrefix | None = None,
) -> tuple[Adapted, tuple[list[Notice], list[Notice], list[Notice]]]:
    """The message-by-message adaptations of `adapt` alone, for the first messages of a conversation.

    The adapted messages, then the notices of each stage (call names, call ids, the provider's).
    With `prefix`, the messages are those after it: each stage's notices (and the call ids'
    uses) are the prefix's and theirs.
    """
    adapted = adapt(spec, request, paired, path, prefix, names_only=True)
    call_name_notices = list(adapted.notices)
    adapted.notices.clear()
    _call_ids(adapted, paired.origins, path)
    call_id_notices = list(adapted.notices)
    adapted.notices.clear()
    if spec.adapt_messages is not None:
        spec.adapt_messages(adapted, paired.origins, path)  # the prefix's notices first
    elif prefix is not None:
        adapted.notices.extend(prefix.message_notices)
    return adapted, (call_name_notices, call_id_notices, list(adapted.notices))
