"""When a conversation's start can be rendered once as a prefix, and when what follows may continue it
(prefix.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pioneer_grpc.providers import specs
from pioneer_grpc.providers.prefix import continues, render_prefix
from pioneer_grpc.providers.render import render, render_after
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.test_render_after import HISTORY, assistant, chat, result, user

P = provider_service_pb2
RENDERERS = list(specs.SPECS)
# A system message between a call and its result: where system text goes apart from the messages, it
# does not end the assistant's turn, so the result still answers the call.
SYSTEM_BETWEEN = [
    user("Weather?"),
    assistant("", ("call_1", "get_weather")),
    {"role": "CHAT_ROLE_SYSTEM", "content": "Be brief."},
    result("call_1", "get_weather"),
]


@pytest.mark.parametrize("provider", RENDERERS)
def test_no_messages_are_no_prefix(provider: int) -> None:
    assert render_prefix(provider, []) is None
    assert render_prefix(provider, list(chat(provider, HISTORY, {}).messages)) is not None


def test_every_provider_keeps_a_prefix() -> None:
    # The prefix tests take the providers with a message renderer: none may fall out of them unseen.
    assert [spec.name for spec in specs.SPECS.values() if spec.render_messages is None] == []


def test_a_provider_without_a_message_renderer_has_no_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = list(chat(P.PROVIDER_OPENAI_CHAT_COMPLETIONS, HISTORY, {}).messages)
    assert render_prefix(P.PROVIDER_UNSPECIFIED, messages) is None
    spec = specs.SPECS[P.PROVIDER_OPENAI_CHAT_COMPLETIONS]
    monkeypatch.setitem(specs.SPECS, spec.provider, replace(spec, render_messages=None))
    assert render_prefix(P.PROVIDER_OPENAI_CHAT_COMPLETIONS, messages) is None


def test_what_may_follow_a_prefix() -> None:
    provider = P.PROVIDER_ANTHROPIC_MESSAGES
    prefix = render_prefix(provider, list(chat(provider, HISTORY, {}).messages), path="turn.chat")
    assert prefix is not None
    assert prefix.path == "turn.chat"
    follows = chat(provider, [user("Next?")], {})
    assert continues(prefix, provider, "turn.chat", follows)
    assert not continues(prefix, provider, "chat_request", follows)
    assert not continues(prefix, P.PROVIDER_GEMINI_GENERATE_CONTENT, "turn.chat", follows)
    assert not continues(prefix, provider, "turn.chat", chat(provider, [assistant("Hi.")], {}))
    assert not continues(prefix, provider, "turn.chat", chat_pb2.ChatRequest())


@pytest.mark.parametrize("provider", [P.PROVIDER_ANTHROPIC_MESSAGES, P.PROVIDER_GEMINI_GENERATE_CONTENT])
def test_a_system_message_between_a_call_and_its_result_keeps_them_paired(provider: int) -> None:
    prefix = render_prefix(provider, list(chat(provider, SYSTEM_BETWEEN, {}).messages))
    assert prefix is not None
    assert [n.code for n in prefix.pairing.notices] == []
    whole = chat(provider, [*SYSTEM_BETWEEN, user("Thanks.")], {})
    after = render_after(
        prefix, provider, chat(provider, [user("Thanks.")], {}), lambda: whole, source_bytes=whole.ByteSize()
    ).encoded()
    assert after == render(provider, whole, capped_parts=True)


def test_a_prefix_records_the_media_kinds_it_carries() -> None:
    provider = P.PROVIDER_OPENAI_CHAT_COMPLETIONS
    prefix = render_prefix(provider, list(chat(provider, HISTORY, {}).messages))
    assert prefix is not None
    assert prefix.media_kinds == frozenset({"image", "file"})
    plain = render_prefix(provider, list(chat(provider, [user("Hi."), assistant("Hello.")], {}).messages))
    assert plain is not None
    assert plain.media_kinds == frozenset()
