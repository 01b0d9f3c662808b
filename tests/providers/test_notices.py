"""Notices are empty only when the body matches the request: every smaller change is named."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.protobuf import json_format

from pioneer_grpc.providers import render
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.cases import MODELS, PROVIDERS
from tests.providers.conformance import conformances

P = provider_service_pb2
ALL = list(PROVIDERS.values())
USER = {"role": "CHAT_ROLE_USER", "content": "Hi"}


def notices(provider: int, messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    request = json_format.ParseDict({"model": MODELS[provider], "messages": messages}, chat_pb2.ChatRequest())
    out = render(provider, request)  # type: ignore[arg-type]
    conformances()[provider].strict(json.loads(out.body_json))
    return [(n.code, n.field) for n in out.notices]


@pytest.mark.parametrize("provider", ALL)
def test_a_participant_name_is_sent_or_named(provider: int) -> None:
    found = notices(provider, [{**USER, "name": "alice"}])
    if SPECS[provider].participant_names:  # OpenAI Chat Completions
        assert found == []
    else:
        assert found == [("participant_name_dropped", "chat_request.messages[0].name")]


@pytest.mark.parametrize("provider", ALL)
def test_a_mid_conversation_system_message_is_named_where_it_moves(provider: int) -> None:
    messages = [
        USER,
        {"role": "CHAT_ROLE_ASSISTANT", "content": "Hello."},
        {"role": "CHAT_ROLE_SYSTEM", "content": "Be terse."},
        USER,
    ]
    found = notices(provider, messages)
    if SPECS[provider].system_apart:  # Anthropic, Gemini, Bedrock
        assert found == [("system_message_moved", "chat_request.messages[2]")]
    else:
        assert found == []  # OpenAI keeps it in place


@pytest.mark.parametrize("provider", ALL)
def test_opening_system_messages_without_a_compiled_prompt_need_no_notice(provider: int) -> None:
    assert notices(provider, [{"role": "CHAT_ROLE_SYSTEM", "content": "Be terse."}, USER]) == []


@pytest.mark.parametrize("provider", ALL)
def test_reasoning_text_is_named_as_not_sent(provider: int) -> None:
    messages = [
        USER,
        {"role": "CHAT_ROLE_ASSISTANT", "content": "Hello.", "reasoningContent": "They said hi."},
        USER,
    ]
    assert notices(provider, messages) == [
        ("reasoning_content_not_sent", "chat_request.messages[1].reasoning_content")
    ]
