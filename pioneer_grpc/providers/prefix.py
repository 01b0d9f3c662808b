"""A conversation's first messages checked, paired, adapted and rendered once for a provider.

An agent loop's rounds send the same history followed by a few new messages.
Everything the provider rules and renderers do to the history is the same each
round as long as what follows cannot change it, which holds when the history
leaves no tool call open and the new messages start with a user message: the
pairing rules then continue from where the history left them, no message merges
across that boundary, and the rules that look at the whole conversation (the
first message's role, the last message, the tools called) read either the new
messages or what the prefix records. `render.render_after` checks that boundary
and renders the whole conversation again whenever it does not hold or a
violation must be named.

The same boundary lets a prefix grow: after a completed turn the kept history is
the previous one followed by the turn's messages, and `extend_prefix` renders
only those after the previous prefix (None where the boundary does not hold, and
the whole history is rendered again: `render_prefix` stays the reference).

And slide: past the turn limit the oldest turns leave the history as new ones
come, and `slide_prefix` takes the left turns off the front of a prefix without
rendering the rest again (`slide_prefix` says where that holds).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.providers import provider_rules
from pioneer_grpc.providers.common import Options, Prepared, media_of, system_messages, take_leading_system
from pioneer_grpc.providers.conversation import CallAt, Notice, PairedPrefix, RenderedPrefix, pair_prefix
from pioneer_grpc.providers.spec import ProviderSpec
from pioneer_grpc.providers.specs import spec_for
from pioneer_grpc.providers.validate import message_checks
from pioneer_grpc.v1 import chat_pb2


def render_prefix(
    provider: int, messages: Sequence[chat_pb2.ChatMessage], path: str = "chat_request"
) -> RenderedPrefix | None:
    """The prefix of `messages` for `provider`; None when it cannot serve as one.

    That is: a provider without a message renderer here, no messages, a message
    that breaks a rule (the whole conversation must be rendered to name it), a
    call left open at the end, or a conversation starting with an assistant
    message where the provider refuses one.
    """
    if not messages:
        return None
    return _rendered(provider, chat_pb2.ChatRequest(messages=messages), path, None)


def extend_prefix(
    provider: int,
    prefix: RenderedPrefix,
    messages: Sequence[chat_pb2.ChatMessage],
    path: str = "chat_request",
) -> RenderedPrefix | None:
    """`render_prefix` of the prefix's messages followed by `messages`, rendering `messages` only;
    None where that may differ from the render from scratch, or where that is None.

    It is the same exactly where a round's messages may follow the prefix (`continues`,
    the module's doc): the new messages start with a user message, so the pairing,
    the call ids' uses and the notices go on from the prefix's, no message merges
    across the boundary but where the provider's `join_rendered` says, and the
    conversation's first message and opening system text are the prefix's.
    """
    request = chat_pb2.ChatRequest(messages=messages)
    if not continues(prefix, provider, path, request):
        return None
    return _rendered(provider, request, path, prefix)


def _rendered(
    provider: int, request: chat_pb2.ChatRequest, path: str, prefix: RenderedPrefix | None
) -> RenderedPrefix | None:
    """The prefix of `request`'s messages, or of `prefix`'s followed by them."""
    spec = spec_for(provider)
    if spec is None or spec.render_messages is None:
        return None
    if message_checks(spec, request, path):
        return None
    found = pair_prefix(
        request, path, system_apart=spec.system_apart, prefix=prefix.pairing if prefix is not None else None
    )
    if found is None:
        return None
    paired, pairing = found
    if provider_rules.message_violations(spec, paired, path):
        return None
    adapted, (call_name_notices, call_id_notices, message_notices) = provider_rules.adapt_prefix(
        spec, request, paired, path, prefix
    )
    if prefix is None:
        leading = take_leading_system(adapted.request)
        leading_origins = tuple(paired.origins[: len(leading)])
    else:  # the messages start with a user message: the opening system text is the prefix's
        leading, leading_origins = list(prefix.leading_system), prefix.leading_origins
    origins = paired.origins[len(leading) :] if prefix is None else paired.origins
    prepared = Prepared(
        request=adapted.request,
        options=Options(),
        path=path,
        tools=[],
        choice=chat_pb2.TOOL_CHOICE_MODE_UNSPECIFIED,
        choice_name="",
        parallel=None,
        stable="",
        dynamic="",
        origins=tuple(origins),
        prefix=prefix,
    )
    try:
        rendered = spec.render_messages(prepared)
    except InvalidArgument:
        return None
    called = dict.fromkeys(prefix.called) if prefix is not None else {}
    called.update(provider_rules.tools_called(adapted.request.messages))
    media_kinds = frozenset(
        media[0]
        for message in adapted.request.messages
        for part in message.content_parts
        if (media := media_of(part)) is not None
    )
    return RenderedPrefix(
        provider=provider,
        path=path,
        pairing=pairing,
        call_name_notices=tuple(call_name_notices),
        call_id_notices=tuple(call_id_notices),
        message_notices=tuple(message_notices),
        call_id_uses=dict(adapted.id_uses),
        called=tuple(called),
        has_results=(prefix is not None and prefix.has_results)
        or provider_rules.has_tool_results(adapted.request.messages),
        rendered=tuple(spec.join_rendered(prefix.rendered, rendered) if prefix is not None else rendered),
        # With a prefix, its system texts first (common.system_messages).
        system_texts=tuple(system_messages(prepared)),
        leading_system=tuple(leading),
        leading_origins=leading_origins,
        media_kinds=media_kinds | prefix.media_kinds if prefix is not None else media_kinds,
    )


def continues(prefix: RenderedPrefix, provider: int, path: str, request: chat_pb2.ChatRequest) -> bool:
    """Whether `request`'s messages may follow `prefix` for this render (see the module's doc)."""
    return (
        prefix.provider == provider
        and prefix.path == path
        and len(request.messages) > 0
        and request.messages[0].role == chat_pb2.CHAT_ROLE_USER
    )


def slide_prefix(
    provider: int,
    prefix: RenderedPrefix,
    dropped: Sequence[chat_pb2.ChatMessage],
    kept: Sequence[chat_pb2.ChatMessage],
    path: str = "chat_request",
) -> RenderedPrefix | None:
    """`render_prefix` of the prefix's messages without `dropped`, the messages right after its
    opening system ones; `kept` are the messages that follow them. Only `dropped` is rendered
    (alone, to learn what it added); None where the result may differ from the render from
    scratch, which is then the answer.

    What `dropped` rendered is the prefix's first rendered messages, and nothing of `kept`
    depends on it, exactly when:
    - `dropped` starts with a user message and ends with an assistant message without tool
      calls, and `kept` starts with a user message: no call of `dropped` is answered in `kept`,
      no message merges across either boundary (Gemini's and Bedrock's merges join assistant
      messages, Bedrock's user ones; an assistant message never merges with a user one), the
      opening system messages stay the opening ones, and the pairing and the notices of `kept`
      go on as they began;
    - where call ids must be unique in the conversation, no id of `dropped` is used in `kept`
      again (its later uses are rewritten by how often it was used before: that changes);
    - every notice names a message by its index (they are moved down by len(dropped)).
    What the whole conversation records (the tools called, whether results or media are
    among the messages) is read again from `kept` where `dropped` had any.
    """
    if not kept or not dropped or kept[0].role != chat_pb2.CHAT_ROLE_USER:
        return None
    return _without(provider, prefix, dropped, kept, path, at_front=True)


def cut_prefix(
    provider: int,
    prefix: RenderedPrefix,
    removed: Sequence[chat_pb2.ChatMessage],
    kept: Sequence[chat_pb2.ChatMessage],
    path: str = "chat_request",
) -> RenderedPrefix | None:
    """`render_prefix` of the prefix's messages without their last ones, `removed`; `kept` are the
    messages before those (but the opening system ones). Only `removed` is rendered (alone, to
    learn what it added); None where the result may differ from the render from scratch, which
    is then the answer.

    It is the same exactly where `removed` starts with a user message and `kept` ends with an
    assistant message without tool calls (nothing merges across the cut, no call is answered
    across it), no call id of `removed` is used in `kept` too (the pairing would name the call
    `kept` made with it), and every notice names a message by its index (those of `removed` go).
    What the whole conversation records (the tools called, whether results or media are among
    the messages) is read again from `kept` where `removed` had any.
    """
    if not kept or not removed or not _ends_a_turn(kept):
        return None
    return _without(provider, prefix, removed, kept, path, at_front=False)


def _ends_a_turn(messages: Sequence[chat_pb2.ChatMessage]) -> bool:
    """Whether `messages` end with an assistant message without tool calls."""
    return messages[-1].role == chat_pb2.CHAT_ROLE_ASSISTANT and not messages[-1].tool_calls


def _without(
    provider: int,
    prefix: RenderedPrefix,
    gone_messages: Sequence[chat_pb2.ChatMessage],
    kept: Sequence[chat_pb2.ChatMessage],
    path: str,
    *,
    at_front: bool,
) -> RenderedPrefix | None:
    """`prefix` without `gone_messages`, whole turns at its front (after the opening system
    messages) or at its end; what `slide_prefix` and `cut_prefix` say."""
    if prefix.provider != provider or prefix.path != path:
        return None
    if gone_messages[0].role != chat_pb2.CHAT_ROLE_USER or (at_front and not _ends_a_turn(gone_messages)):
        return None
    spec = spec_for(provider)
    gone = render_prefix(provider, gone_messages, path)
    if spec is None or gone is None or gone.leading_system or len(gone.rendered) > len(prefix.rendered):
        return None
    uses = dict(prefix.call_id_uses)
    for call_id, count in gone.call_id_uses.items():
        left = uses.get(call_id, 0) - count
        # At the front a call id may go on in `kept` where ids need not be unique; at the end its
        # use in `kept` would make the pairing name the call `kept` made with it.
        if left < 0 or (left and (spec.unique_call_ids or not at_front)):
            return None
        if left:
            uses[call_id] = left
        else:
            del uses[call_id]
    start = len(prefix.leading_origins) + (0 if at_front else len(kept))
    moved = _Moved(path, start, len(gone_messages))
    notices = [
        moved.notices(notices)
        for notices in (
            prefix.pairing.notices,
            prefix.call_name_notices,
            prefix.call_id_notices,
            prefix.message_notices,
        )
    ]
    pairing_notices, call_name_notices, call_id_notices, message_notices = notices
    if None in notices or len(gone.system_texts) > len(prefix.system_texts):
        return None
    assert pairing_notices is not None and call_name_notices is not None
    assert call_id_notices is not None and message_notices is not None
    pairing = PairedPrefix(
        size=prefix.pairing.size - len(gone_messages),
        calls=moved.calls(prefix.pairing.calls),
        answered=moved.indices(prefix.pairing.answered),
        notices=pairing_notices,
    )
    called = prefix.called
    if gone.called and at_front:
        called = _called(spec, prefix.called, kept)
    elif gone.called:
        before = set(_called(spec, tuple(gone.called), kept))
        called = tuple(name for name in prefix.called if name not in gone.called or name in before)
    rendered_gone, texts_gone = len(gone.rendered), len(gone.system_texts)
    return replace(
        prefix,
        pairing=pairing,
        call_name_notices=call_name_notices,
        call_id_notices=call_id_notices,
        message_notices=message_notices,
        call_id_uses=uses,
        called=called,
        # A call left without a result gets one (with a notice of the pairing's).
        has_results=(
            bool(pairing_notices) or provider_rules.has_tool_results(kept)
            if gone.has_results
            else prefix.has_results
        ),
        rendered=prefix.rendered[rendered_gone:]
        if at_front
        else prefix.rendered[: len(prefix.rendered) - rendered_gone],
        system_texts=(
            prefix.system_texts[texts_gone:]
            if at_front
            else prefix.system_texts[: len(prefix.system_texts) - texts_gone]
        ),
        media_kinds=_media_kinds(kept) if gone.media_kinds else prefix.media_kinds,
    )


class _Moved:
    """Indices of a prefix's messages once `count` of them at `start` are gone: those before stay,
    those gone go, those after move down by `count`."""

    def __init__(self, path: str, start: int, count: int) -> None:
        self.start, self.count = start, count
        self.field = re.compile(re.escape(f"{path}.messages[") + r"(\d+)\]")

    def index(self, index: int) -> int | None:
        if index < self.start:
            return index
        return None if index < self.start + self.count else index - self.count

    def notices(self, notices: Sequence[Notice]) -> tuple[Notice, ...] | None:
        """None when a notice names no message by its index."""
        out: list[Notice] = []
        for notice in notices:
            found = self.field.match(notice.field)
            if found is None:
                return None
            index = self.index(int(found[1]))
            if index is not None:
                rest = notice.field[found.end() :]
                out.append(replace(notice, field=f"{notice.field[: found.start(1)]}{index}]{rest}"))
        return tuple(out)

    def calls(self, calls: Mapping[str, CallAt]) -> dict[str, CallAt]:
        start, end, count = self.start, self.start + self.count, self.count
        return {
            call_id: call if call.message < start else CallAt(call.message - count, call.position, call.name)
            for call_id, call in calls.items()
            if not start <= call.message < end
        }

    def indices(self, answered: Mapping[str, int]) -> dict[str, int]:
        start, end, count = self.start, self.start + self.count, self.count
        return {
            call_id: index if index < start else index - count
            for call_id, index in answered.items()
            if not start <= index < end
        }


def _called(
    spec: ProviderSpec, called: tuple[str, ...], kept: Sequence[chat_pb2.ChatMessage]
) -> tuple[str, ...]:
    """`provider_rules.tools_called` of `kept` as adapted, when its tools are among `called`: read
    until every one of `called` was seen (all are, but those only `dropped` called)."""
    wanted = set(called)
    found: dict[str, None] = {}
    for message in kept:
        for call in message.tool_calls:
            name = provider_rules.sent_call_name(spec, call.name)
            if name in wanted and name not in found:
                found[name] = None
        if len(found) == len(wanted):
            break
    return tuple(found)


def _media_kinds(messages: Sequence[chat_pb2.ChatMessage]) -> frozenset[str]:
    return frozenset(
        media[0]
        for message in messages
        for part in message.content_parts
        if (media := media_of(part)) is not None
    )
