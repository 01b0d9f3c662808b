"""CountTokens through the providers' own count-tokens endpoints (a loopback stand-in), and the fallback."""

from __future__ import annotations

import pytest

from pioneer_grpc.adapters.count_tokens import MAX_ITEMS
from pioneer_grpc.history import tokens
from pioneer_grpc.v1 import chat_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb
from tests.history.fake_counter import FakeCounter

TEXTS = ["Сервер считает токены один раз.", "def fit(entries): return entries", ""]
MESSAGE = chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content="how long is this message, in tokens?")
KEY_ENV = "PIONEER_TEST_COUNT_TOKENS_KEY"


@pytest.fixture
async def fake():
    counter = await FakeCounter().start()
    yield counter
    await counter.close()


async def _serve(server_factory, monkeypatch, fake: FakeCounter, **overrides):
    monkeypatch.setenv(KEY_ENV, fake.api_key)
    return await server_factory(
        count_tokens_anthropic_base_url=fake.base_url,
        count_tokens_anthropic_api_key_env=KEY_ENV,
        count_tokens_gemini_base_url=fake.base_url,
        count_tokens_gemini_api_key_env=KEY_ENV,
        **overrides,
    )


async def _count(server, model: str) -> pb.CountTokensResponse:
    return await (await server.client()).count_tokens(
        pb.CountTokensRequest(texts=TEXTS, messages=[MESSAGE], model=model)
    )


def _estimate(tokenizer: str) -> list[int]:
    bare = tokens.count_blocking(TEXTS, tokenizer)
    return [*bare, sum(tokens.count_blocking([MESSAGE.content], tokenizer)) + tokens.MESSAGE_OVERHEAD]


async def test_anthropic_counts_are_the_providers_own(server_factory, monkeypatch, fake):
    server = await _serve(server_factory, monkeypatch, fake)
    reply = await _count(server, "claude-haiku-4-5")
    assert (reply.tokenizer, reply.exact, reply.fallback_reason) == ("anthropic_count_tokens", True, "")
    # The stand-in counts len // 3; an empty text is not sent.
    expected = [len(t) // 3 for t in TEXTS] + [len(MESSAGE.content) // 3]
    assert list(reply.token_counts) == expected
    assert reply.total_tokens == sum(expected)
    assert len(fake.requests) == 3
    path, headers, body = fake.requests[0]
    assert path == "/v1/messages/count_tokens"
    assert headers["x-api-key"] == fake.api_key
    assert headers["anthropic-version"] == "2023-06-01"
    assert body["model"] == "claude-haiku-4-5"
    assert body["messages"][0]["role"] == "user"


async def test_gemini_counts_are_the_providers_own(server_factory, monkeypatch, fake):
    server = await _serve(server_factory, monkeypatch, fake)
    reply = await _count(server, "gemini-2.5-flash")
    assert (reply.tokenizer, reply.exact, reply.fallback_reason) == ("gemini_count_tokens", True, "")
    assert list(reply.token_counts) == [len(t) // 3 for t in TEXTS] + [len(MESSAGE.content) // 3]
    paths = {path for path, _, _ in fake.requests}
    assert paths == {"/v1beta/models/gemini-2.5-flash:countTokens"}
    _, headers, body = fake.requests[0]
    assert headers["x-goog-api-key"] == fake.api_key
    assert "x-api-key" not in headers
    assert body["contents"][0]["parts"][0]["text"] in {*TEXTS, MESSAGE.content}


async def test_openai_models_never_ask_a_provider(server_factory, monkeypatch, fake):
    server = await _serve(server_factory, monkeypatch, fake)
    reply = await _count(server, "gpt-4o-mini")
    assert (reply.tokenizer, reply.exact, reply.fallback_reason) == ("o200k_base", True, "")
    assert fake.requests == []


@pytest.mark.parametrize(
    ("fail", "hang", "why"),
    [
        ((500, {"error": "overloaded"}), 0.0, "HTTP 500"),
        ((200, "not json"), 0.0, "not JSON"),
        ((200, {"tokens": 12}), 0.0, "without a count"),
        (None, 2.0, "Timeout"),
    ],
)
async def test_a_failed_provider_count_falls_back_to_the_estimate(
    server_factory, monkeypatch, fake, fail, hang, why
):
    fake.fail, fake.hang_seconds = fail, hang
    # Short only where the timeout is the failure: a busy machine can take 0.2 s to answer a 500.
    timeout = 0.2 if hang else 30.0
    server = await _serve(server_factory, monkeypatch, fake, count_tokens_timeout_seconds=timeout)
    for model, estimate in (("claude-haiku-4-5", "claude_estimate"), ("gemini-2.5-flash", "gemini_estimate")):
        reply = await _count(server, model)
        assert (reply.tokenizer, reply.exact) == (estimate, False)
        assert list(reply.token_counts) == _estimate(estimate)
        assert why in reply.fallback_reason


async def test_a_wrong_key_falls_back_with_the_providers_status(server_factory, monkeypatch, fake):
    server = await _serve(server_factory, monkeypatch, fake)
    fake.api_key = "another-key"
    reply = await _count(server, "claude-haiku-4-5")
    assert (reply.tokenizer, reply.exact) == ("claude_estimate", False)
    assert "HTTP 401" in reply.fallback_reason


async def test_too_many_items_are_estimated_without_asking(server_factory, monkeypatch, fake):
    server = await _serve(server_factory, monkeypatch, fake)
    texts = [f"text {i}" for i in range(MAX_ITEMS + 1)]
    reply = await (await server.client()).count_tokens(
        pb.CountTokensRequest(texts=texts, model="claude-haiku-4-5")
    )
    assert (reply.tokenizer, reply.exact) == ("claude_estimate", False)
    assert list(reply.token_counts) == tokens.count_blocking(texts, "claude_estimate")
    assert str(MAX_ITEMS) in reply.fallback_reason
    assert fake.requests == []


async def test_without_a_key_the_estimate_is_returned_without_any_request(server_factory, monkeypatch, fake):
    monkeypatch.delenv(KEY_ENV, raising=False)
    server = await server_factory(
        count_tokens_anthropic_base_url=fake.base_url,
        count_tokens_anthropic_api_key_env=KEY_ENV,
        count_tokens_gemini_base_url=fake.base_url,
        count_tokens_gemini_api_key_env=KEY_ENV,
    )
    assert server.ctx.token_counter is None
    for model, estimate in (("claude-haiku-4-5", "claude_estimate"), ("gemini-2.5-flash", "gemini_estimate")):
        reply = await _count(server, model)
        assert (reply.tokenizer, reply.exact, reply.fallback_reason) == (estimate, False, "")
        assert list(reply.token_counts) == _estimate(estimate)
    assert fake.requests == []
