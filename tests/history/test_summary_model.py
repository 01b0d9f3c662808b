"""The `openai` summarizer inside real loads: failures fall back, concurrency compresses once."""

from __future__ import annotations

import asyncio

import pytest

from pioneer_grpc.v1 import history_pb2
from tests.conftest import fresh_postgres_database
from tests.history.fake_openai import FakeOpenAI, completion
from tests.history.rpc import codes, config, create, load
from tests.history.test_load_rpc import fill

# Low water 0: the summary alone stands for every turn loaded (the seed's policy).
SMALL = config(2_000, 1_000, model="main-model", summary_model="small-model")
SMALL.compaction_low_water_percent = 0


@pytest.fixture
async def fake():
    server = await FakeOpenAI().start()
    yield server
    await server.close()


# The tests share their process with the fake endpoint, so a full garbage collection
# (over half a second late in a suite on a loaded machine) stalls both: a timeout
# that is not what a test is about is far longer than any such stall.
ROOMY = 30.0
# Longer than the client waits: the fake answers only if the client's timeout never fires.
NEVER = ROOMY


async def openai_server(server_factory, database_url, fake, **overrides):
    return await server_factory(
        database_url=database_url,
        summarizer="openai",
        summarizer_base_url=fake.base_url,
        summarizer_timeout_seconds=overrides.pop("timeout", ROOMY),
        summarizer_retries=overrides.pop("retries", 0),
        **overrides,
    )


async def test_success_stores_the_model_summary(server_factory, database_url, fake):
    fake.reply = lambda body: completion("Decisions: keep tabs. Files: src/a.py.")
    history = await (await openai_server(server_factory, database_url, fake)).client()
    await create(history, "t", SMALL)
    await fill(history, "t", 4)
    response = await load(history, "t")
    assert response.report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED
    assert response.report.summarizer == "openai"
    assert [m.content for m in response.messages] == [
        "Summary of earlier conversation:\nDecisions: keep tabs. Files: src/a.py."
    ]
    [body] = fake.requests
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("small-model", 100, 0.3)
    summary = (await history.get_thread_summary(thread_id="t")).summary
    assert (summary.model, summary.summarizer) == ("small-model", "openai")


@pytest.mark.parametrize(
    ("reply", "timeout_seconds", "code", "message"),
    [
        (lambda body: (500, {"error": "down"}), ROOMY, "summarizer_failed", 'HTTP 500: {"error": "down"}'),
        (lambda body: NEVER, 0.3, "summarizer_failed", "no answer within 0.3 s"),
        (
            lambda body: completion(""),
            ROOMY,
            "summarizer_failed",
            "the summary model returned an empty summary",
        ),
        (
            lambda body: completion("word " * 400),
            ROOMY,
            "summary_rejected",
            "over 150 (1.5x the target of 100)",
        ),
    ],
    ids=["http-500", "timeout", "empty", "oversized"],
)
async def test_failures_fall_back_to_truncation_with_a_diagnostic(
    server_factory, database_url, fake, reply, timeout_seconds, code, message
):
    fake.reply = reply
    history = await (
        await openai_server(server_factory, database_url, fake, timeout=timeout_seconds)
    ).client()
    await create(history, "t", SMALL)
    await fill(history, "t", 6)  # 1,200 tokens: over the whole budget
    response = await load(history, "t")
    report = response.report
    assert report.decision == history_pb2.HISTORY_DECISION_TRUNCATED
    assert report.summary_use == history_pb2.SUMMARY_USE_FAILED
    assert codes(response) == [code]
    assert message in report.diagnostics[0].message
    # The newest ten messages (1,000 tokens) fit exactly; the oldest turn is dropped.
    assert (report.tokens_after, report.entries_kept, report.entries_dropped) == (1000, 10, 2)
    assert not (await history.get_thread_summary(thread_id="t")).HasField("summary")


async def test_concurrent_loads_compress_once(server_factory, database_url, fake):
    fake.reply = lambda body: 0.3  # stalls, then answers "late"
    history = await (await openai_server(server_factory, database_url, fake)).client()
    await create(history, "t", SMALL)
    await fill(history, "t", 4)
    responses = await asyncio.gather(*(load(history, "t") for _ in range(8)))
    assert len(fake.requests) == 1
    uses = sorted(history_pb2.SummaryUse.Name(r.report.summary_use) for r in responses)
    assert uses == ["SUMMARY_USE_CREATED"] + ["SUMMARY_USE_REUSED"] * 7
    assert {r.messages[0].content for r in responses} == {"Summary of earlier conversation:\nlate"}


@pytest.mark.postgres
async def test_two_replicas_compress_once(server_factory, fake):
    async with fresh_postgres_database(migrated=True) as url:
        fake.reply = lambda body: 0.3
        one = await (await openai_server(server_factory, url, fake)).client()
        two = await (await openai_server(server_factory, url, fake)).client()
        await create(one, "t", SMALL)
        await fill(one, "t", 4)
        responses = await asyncio.gather(*(load(replica, "t") for replica in (one, two) * 3))
        assert len(fake.requests) == 1
        created = [r for r in responses if r.report.summary_use == history_pb2.SUMMARY_USE_CREATED]
        assert len(created) == 1
        assert all(r.messages[0].content == "Summary of earlier conversation:\nlate" for r in responses)
