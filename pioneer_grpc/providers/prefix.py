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
"""

from __future__ import annotations

from collections.abc import Sequence

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.providers import provider_rules
from pioneer_grpc.providers.common import Options, Prepared, media_of, system_messages, take_leading_system
from pioneer_grpc.providers.conversation import RenderedPrefix, pair_prefix
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
