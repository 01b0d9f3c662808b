"""The conversation rules every provider shares: each tool call answered, once, by its own tool.

What every provider documents, in the form of its strictest reading:
- every tool call is answered before the next user or assistant message (and,
  where system text stays among the messages, before the next system message);
- a call id is unique among the calls not answered yet (models reuse ids across
  turns: `call_0` every turn); where a provider needs ids unique in the whole
  conversation, provider_rules rewrites each reuse, with a notice;
- a result answers an open call, names that call's tool, and comes right after it.

`pair_tool_calls` decides per rule:
- a call with no result (the loop crashed, was cancelled, timed out) is
  ADAPTED: a tool result saying no result was recorded is inserted where the
  result belongs, and a notice names the call;
- a call id of a call still open, a second result for a call, a result for no call, a
  result that comes after a later message, and a result naming another tool are
  REJECTED: which result belongs to which call cannot be known, so nothing
  truthful can be sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from pioneer_grpc.errors import FieldViolation
from pioneer_grpc.v1 import chat_pb2

INTERRUPTED_RESULT = (
    "No result was recorded for this tool call: it was interrupted before it finished. "
    "Call the tool again if its result is still needed."
)
INTERRUPTED_TOOL_CALL_ANSWERED = "interrupted_tool_call_answered"


@dataclass(frozen=True)
class Notice:
    """One adaptation made so the provider accepts the body (RenderNotice)."""

    code: str
    message: str
    field: str


class CallAt(NamedTuple):
    """Where a tool call was made (a tuple: a slid prefix makes many, providers/prefix.py)."""

    message: int  # index of the message in the request
    position: int  # index in that message's tool_calls
    name: str


@dataclass
class Paired:
    """The messages to render, and for each the index of the request message it came from.

    A synthesized result points at the message whose call it answers.
    """

    messages: list[chat_pb2.ChatMessage]
    origins: list[int]


class _Pairing:
    def __init__(self, path: str, breakers: frozenset[int]) -> None:
        self.path = path
        self.breakers = breakers
        self.out = Paired([], [])
        self.open: dict[str, CallAt] = {}
        self.calls: dict[str, CallAt] = {}
        self.answered: dict[str, int] = {}
        self.violations: list[FieldViolation] = []
        self.notices: list[Notice] = []

    def field(self, index: int, rest: str = "") -> str:
        return f"{self.path}.messages[{index}]{rest}"

    def close_open_calls(self) -> None:
        for call_id, call in self.open.items():
            self.out.messages.append(
                chat_pb2.ChatMessage(
                    role=chat_pb2.CHAT_ROLE_TOOL,
                    tool_call_id=call_id,
                    name=call.name,
                    content=INTERRUPTED_RESULT,
                )
            )
            self.out.origins.append(call.message)
            self.notices.append(
                Notice(
                    INTERRUPTED_TOOL_CALL_ANSWERED,
                    f"call {call_id!r} to {call.name!r} has no result before the next message: "
                    "a result saying it was interrupted was sent in its place",
                    self.field(call.message, f".tool_calls[{call.position}]"),
                )
            )
        self.open.clear()

    def add_calls(self, index: int, message: chat_pb2.ChatMessage) -> None:
        for j, call in enumerate(message.tool_calls):
            if not call.id:
                continue  # reported by the request checks
            earlier = self.open.get(call.id)
            if earlier is not None:
                self.violations.append(
                    FieldViolation(
                        self.field(index, f".tool_calls[{j}].id"),
                        f"duplicate of messages[{earlier.message}].tool_calls[{earlier.position}].id "
                        f"{call.id!r}, which is still open: a call id must be unique among the calls "
                        "not answered yet",
                    )
                )
                continue
            # An id may be used again once its call is answered: the new call is the one it names now.
            self.answered.pop(call.id, None)
            self.calls[call.id] = self.open[call.id] = CallAt(index, j, call.name)

    def add_result(self, index: int, message: chat_pb2.ChatMessage) -> None:
        call_id = message.tool_call_id
        call = self.open.pop(call_id, None)
        if call is not None:
            if message.name and call.name and message.name != call.name:
                self.violations.append(
                    FieldViolation(
                        self.field(index, ".name"),
                        f"names tool {message.name!r}, but call {call_id!r} "
                        f"(messages[{call.message}]) is to {call.name!r}",
                    )
                )
            self.answered[call_id] = index
            return
        if call_id in self.answered:
            first = self.answered[call_id]
            description = f"a second result for call {call_id!r} (messages[{first}] answered it)"
        elif call_id in self.calls:
            made = self.calls[call_id].message
            description = (
                f"answers call {call_id!r} of messages[{made}], but another message comes between: "
                "a result must follow the assistant message that made the call"
            )
        else:
            description = f"answers no tool call of the conversation ({call_id!r})"
        self.violations.append(FieldViolation(self.field(index, ".tool_call_id"), description))


@dataclass(frozen=True)
class PairedPrefix:
    """Where pairing stands after the first `size` messages of a conversation, every call answered."""

    size: int
    calls: Mapping[str, CallAt]
    answered: Mapping[str, int]
    notices: tuple[Notice, ...]


@dataclass(frozen=True)
class RenderedPrefix:
    """The first messages of a conversation checked, paired, adapted and rendered for one provider, once.

    What a later render of the whole conversation needs from them (providers/prefix.py
    builds it; render.render_after uses it). Never mutated: rounds share it.
    """

    provider: int
    path: str
    pairing: PairedPrefix
    # Notices of the adaptations made message by message, by stage (provider_rules.adapt).
    call_name_notices: tuple[Notice, ...]
    call_id_notices: tuple[Notice, ...]
    message_notices: tuple[Notice, ...]
    # How often each call id (as given) is used in these messages.
    call_id_uses: Mapping[str, int]
    # Tool names called (as sent) and whether a tool result is among the messages.
    called: tuple[str, ...]
    has_results: bool
    # The provider's rendered messages (or contents), and the text of system-role messages.
    rendered: tuple[Any, ...]
    system_texts: tuple[str, ...]
    # The media kinds among the messages' content parts.
    media_kinds: frozenset[str] = frozenset()
    # The text of the system messages that open the conversation, and their indices
    # (not in `rendered` or `system_texts`: where they go depends on the compiled prompt).
    leading_system: tuple[str, ...] = ()
    leading_origins: tuple[int, ...] = ()

    @property
    def size(self) -> int:
        return self.pairing.size


def _paired(
    request: chat_pb2.ChatRequest, path: str, system_apart: bool, prefix: PairedPrefix | None
) -> _Pairing:
    breakers = {chat_pb2.CHAT_ROLE_USER, chat_pb2.CHAT_ROLE_ASSISTANT}
    if not system_apart:
        breakers.add(chat_pb2.CHAT_ROLE_SYSTEM)
    pairing = _Pairing(path, frozenset(breakers))
    first = 0
    if prefix is not None:
        # The messages continue the prefix's: their indices, calls and answers go on from there.
        first = prefix.size
        pairing.calls.update(prefix.calls)
        pairing.answered.update(prefix.answered)
        pairing.notices.extend(prefix.notices)
    for index, message in enumerate(request.messages, start=first):
        if message.role == chat_pb2.CHAT_ROLE_TOOL:
            if message.tool_call_id:
                pairing.add_result(index, message)
        elif message.role in pairing.breakers:
            pairing.close_open_calls()
        pairing.out.messages.append(message)
        pairing.out.origins.append(index)
        if message.role == chat_pb2.CHAT_ROLE_ASSISTANT:
            pairing.add_calls(index, message)
    return pairing


def pair_tool_calls(
    request: chat_pb2.ChatRequest,
    path: str,
    *,
    system_apart: bool,
    prefix: PairedPrefix | None = None,
) -> tuple[Paired, list[Notice], list[FieldViolation]]:
    """The request's messages with every call answered; notices for what was added, violations.

    With `prefix`, the request's messages are the ones after it: indices (origins,
    fields) continue from it, and its notices come first.
    """
    pairing = _paired(request, path, system_apart, prefix)
    pairing.close_open_calls()
    return pairing.out, pairing.notices, pairing.violations


def pair_prefix(
    request: chat_pb2.ChatRequest, path: str, *, system_apart: bool, prefix: PairedPrefix | None = None
) -> tuple[Paired, PairedPrefix] | None:
    """The request's messages paired as the start of a longer conversation.

    None when they break a rule or leave a call open at their end (whether
    that call gets an answer depends on what follows). With `prefix`, the
    messages are the ones after it (as for `pair_tool_calls`): the state
    returned is that of the prefix and them together.
    """
    pairing = _paired(request, path, system_apart, prefix)
    if pairing.open or pairing.violations:
        return None
    size = len(request.messages) + (prefix.size if prefix is not None else 0)
    state = PairedPrefix(size, dict(pairing.calls), dict(pairing.answered), tuple(pairing.notices))
    return pairing.out, state
