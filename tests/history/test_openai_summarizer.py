"""The `openai` summarizer against a local chat-completions server: request shape, retries, failures."""

from __future__ import annotations

import pytest

from pioneer_grpc.adapters import OpenAISummarizer
from pioneer_grpc.history.summarizers import SummarizerError, SummaryRequest
from tests.history.builders import ASSISTANT, USER, entry
from tests.history.fake_openai import FakeOpenAI, completion


@pytest.fixture
async def fake():
    server = await FakeOpenAI().start()
    yield server
    await server.close()


def request(**overrides) -> SummaryRequest:
    values = {
        "entries": [entry("u1", USER, content="Fix src/a.py"), entry("a1", ASSISTANT, content="A" * 5000)],
        "previous_summary": "We use tabs.",
        "target_tokens": 1234,
        "model": "summary-model",
    }
    values.update(overrides)
    return SummaryRequest(**values)


async def test_success_sends_one_user_message_per_the_original(fake, monkeypatch):
    monkeypatch.setenv("TEST_SUMMARY_KEY", "sk-test")
    fake.reply = lambda body: completion("  Decided: tabs.  ")
    summarizer = OpenAISummarizer(fake.base_url, api_key_env="TEST_SUMMARY_KEY", retries=0)
    assert await summarizer.summarize(request()) == "Decided: tabs."
    [body] = fake.requests
    assert body["model"] == "summary-model"
    assert body["temperature"] == 0.3
    assert body["max_tokens"] == 1234
    [message] = body["messages"]
    assert message["role"] == "user"
    prompt = message["content"]
    assert "about 1234 tokens" in prompt
    assert "We use tabs." in prompt
    assert "User: Fix src/a.py" in prompt
    assert "Assistant: " + "A" * 3000 + " [...]" in prompt
    assert "A" * 3001 not in prompt
    for kept in ("file paths", "every correction", "decision", "errors", "still open"):
        assert kept in prompt
    assert fake.headers[0]["authorization"] == "Bearer sk-test"


async def test_server_errors_are_retried_then_reported(fake):
    fake.reply = lambda body: (500, {"error": "boom"})
    summarizer = OpenAISummarizer(fake.base_url, retries=2, first_backoff_seconds=0.01)
    with pytest.raises(SummarizerError, match=r"failed after 3 tries: HTTP 500"):
        await summarizer.summarize(request())
    assert len(fake.requests) == 3


async def test_a_retry_can_succeed(fake):
    answers = iter([(503, "busy"), completion("ok summary")])
    fake.reply = lambda body: next(answers)
    summarizer = OpenAISummarizer(fake.base_url, retries=1, first_backoff_seconds=0.01)
    assert await summarizer.summarize(request()) == "ok summary"


async def test_client_errors_are_not_retried(fake):
    fake.reply = lambda body: (400, {"error": "bad model"})
    summarizer = OpenAISummarizer(fake.base_url, retries=3, first_backoff_seconds=0.01)
    with pytest.raises(SummarizerError, match="HTTP 400") as raised:
        await summarizer.summarize(request())
    assert len(fake.requests) == 1
    # The message counts the requests made, not the ones allowed.
    assert "failed after 1 try: HTTP 400" in str(raised.value)


async def test_timeout(fake):
    # Answers only after 30 s: a stall of the shared process cannot let the answer win.
    fake.reply = lambda body: 30.0
    summarizer = OpenAISummarizer(fake.base_url, timeout_seconds=0.2, retries=0)
    with pytest.raises(SummarizerError, match=r"no answer within 0.2 s"):
        await summarizer.summarize(request())


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (completion("   "), "empty summary"),
        ((200, {"choices": []}), "not a chat completion"),
        ((200, "not json"), "not a chat completion"),
    ],
)
async def test_empty_or_malformed_replies(fake, answer, message):
    fake.reply = lambda body: answer
    with pytest.raises(SummarizerError, match=message):
        await OpenAISummarizer(fake.base_url, retries=0).summarize(request())


async def test_missing_endpoint_or_model_is_reported_without_a_request(fake):
    with pytest.raises(SummarizerError, match="summarizer_base_url is not set"):
        await OpenAISummarizer("").summarize(request())
    with pytest.raises(SummarizerError, match="neither a summary model nor a model"):
        await OpenAISummarizer(fake.base_url).summarize(request(model=""))
    assert fake.requests == []
