"""The use cases with a remote model: the summary model and a provider's count-tokens endpoint, each a
fake speaking the real HTTP protocol on loopback (tests/history/fake_openai.py, fake_counter.py)."""

from __future__ import annotations

from dataclasses import replace

from pioneer_grpc.adapters import build_summarizer
from pioneer_grpc.adapters.count_tokens import build_token_counter
from pioneer_grpc.service import history
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.v1 import chat_pb2, history_pb2
from tests.fast.test_loads import _thread
from tests.history.fake_counter import FakeCounter
from tests.history.fake_openai import FakeOpenAI, completion


async def test_a_summary_model_summarizes_a_history_over_its_threshold(
    ctx: ServiceContext, monkeypatch
) -> None:
    fake = await FakeOpenAI(reply=lambda body: completion("They chose Postgres.")).start()
    monkeypatch.setenv("PIONEER_FAST_KEY", "k")
    try:
        remote = replace(
            ctx, summarizer=build_summarizer("openai", fake.base_url, "PIONEER_FAST_KEY", 5.0, 0)
        )
        await _thread(remote, 12, max_context_tokens=3000, response_reserve_tokens=1000)
        messages, report = await history.load_history(remote, "t")
        assert report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED
        assert "They chose Postgres." in messages[0].content
        assert len(fake.requests) == 1
        await history.load_history(remote, "t")
        assert len(fake.requests) == 1  # the stored summary serves the next load
    finally:
        await fake.close()


async def test_a_providers_count_is_used_where_one_is_configured(ctx: ServiceContext) -> None:
    fake = await FakeCounter(chars_per_token=2).start()
    counter = build_token_counter(
        anthropic_base_url=fake.base_url,
        anthropic_api_key_env="K",
        gemini_base_url="",
        gemini_api_key_env="G",
        timeout_seconds=5.0,
        environ={"K": fake.api_key},
    )
    assert counter is not None
    try:
        exact = replace(ctx, token_counter=counter)
        message = chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content="twelve chars")
        counted = await history.count_tokens_of(exact, ["abcdef"], [message], "claude-sonnet-4-5")
        assert counted.exact and counted.counts[0] == 3
        assert [path for path, _, _ in fake.requests] == ["/v1/messages/count_tokens"] * 2  # one a text
    finally:
        await counter.close()
        await fake.close()
