"""A body rendered from a request over ONE_CALL_SOURCE_BYTES is written in bounded pieces
(body_json), one from a smaller request in one call: `render` and `RenderedBody.encoded` pass the
size of what the body came from to the encoder."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from pioneer_grpc.providers import body_json
from pioneer_grpc.providers.common import ONE_CALL_SOURCE_BYTES
from pioneer_grpc.providers.render import RenderedBody, render
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2

CHAT = provider_service_pb2.PROVIDER_OPENAI_CHAT_COMPLETIONS


@pytest.fixture
def in_pieces(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The bodies body_json wrote (the rest were written in one call)."""
    written: list[Any] = []
    encoded = body_json.encoded

    def spy(value: Any) -> bytes:
        written.append(value)
        return encoded(value)

    monkeypatch.setattr(body_json, "encoded", spy)
    return written


def _request(text: str) -> chat_pb2.ChatRequest:
    return chat_pb2.ChatRequest(
        model="gpt-5", messages=[chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content=text)]
    )


def test_a_body_from_a_large_request_is_written_in_pieces(in_pieces: list[Any]) -> None:
    text = "é" * 600_000  # under the message cap in characters, over the one-call size in bytes
    request = _request(text)
    assert request.ByteSize() > ONE_CALL_SOURCE_BYTES
    rendered = render(CHAT, request)
    assert json.loads(rendered.body)["messages"] == [{"role": "user", "content": text}]
    assert len(in_pieces) == 1
    small = render(CHAT, _request("hi"))
    assert json.loads(small.body)["messages"] == [{"role": "user", "content": "hi"}]
    assert len(in_pieces) == 1


def test_a_rendered_body_is_written_by_the_size_it_came_from(in_pieces: list[Any]) -> None:
    body = {"model": "m", "messages": []}
    large = RenderedBody(body, "/v1/chat/completions", 0, (), source_bytes=ONE_CALL_SOURCE_BYTES + 1)
    assert large.encoded().body == orjson.dumps(body)
    assert in_pieces == [body]
    small = RenderedBody(body, "/v1/chat/completions", 0, (), source_bytes=ONE_CALL_SOURCE_BYTES)
    assert small.encoded().body == orjson.dumps(body)
    assert in_pieces == [body]
