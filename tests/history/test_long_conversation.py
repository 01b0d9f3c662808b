"""300 turns with a load before each: the summary model is asked rarely, and exactly as often as planned.

Budget 12,000 - 2,000 = 10,000: threshold 8,000, target 1,000. A turn is two
100-token messages; the summary model always answers with a 500-token summary
(504 with overhead). The first compression comes at turn 40 (8,000 tokens);
after it, the summary plus 38 new turns (504 + 7,600) cross the threshold
again, so compressions happen at turns 40, 78, 116, 154, 192, 230 and 268: 7.
"""

from __future__ import annotations

import pytest

from pioneer_grpc.history.render import summary_text
from pioneer_grpc.history.tokens import count_tokens
from pioneer_grpc.v1 import history_pb2
from tests.history.fake_openai import FakeOpenAI, completion
from tests.history.rpc import ASSISTANT, config, create, entry, load, stub, turn
from tests.history.test_load_rpc import WORDS_96

TURNS = 300
SUMMARY = " ".join(["word"] * 495)


@pytest.fixture
async def fake():
    server = await FakeOpenAI(reply=lambda body: completion(SUMMARY)).start()
    yield server
    await server.close()


async def test_three_hundred_turns_call_the_summary_model_seven_times(server_factory, database_url, fake):
    assert await count_tokens([summary_text(SUMMARY)]) == [500]
    server = await server_factory(
        database_url=database_url, summarizer="openai", summarizer_base_url=fake.base_url
    )
    history = stub(server)
    await create(history, "long", config(12_000, 2_000, model="m"))
    compressed_at = []
    for i in range(1, TURNS + 1):
        await turn(
            history,
            "long",
            f"turn-{i}",
            entry(f"u{i}", f"turn-{i}", content=WORDS_96),
            entry(f"a{i}", f"turn-{i}", ASSISTANT, content=WORDS_96),
        )
        response = await load(history, "long")
        assert response.report.tokens_after <= 8_000
        if response.report.summary_use == history_pb2.SUMMARY_USE_CREATED:
            compressed_at.append(i)
    assert compressed_at == [40, 78, 116, 154, 192, 230, 268]
    assert len(fake.requests) == 7
