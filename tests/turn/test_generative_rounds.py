"""Generated agent conversations against one real server: every round a provider accepts.

200 conversations (threads; PIONEER_GENERATIVE_CONVERSATIONS), seeded
(PIONEER_GENERATIVE_SEED), played eight at a time on one server and one channel
(20 more on PostgreSQL, PIONEER_GENERATIVE_PG_CONVERSATIONS);
each PrepareTurn renders the thread's history as it stands at that round, and a
run renders at least 2,000 such histories (PIONEER_GENERATIVE_HISTORIES).
Every body PrepareTurn returns passes the strict validator of its provider
(tests/providers/strict.py; Converse's rules and request types in
tests/providers/bedrock/conformance.py); one body in PIONEER_GENERATIVE_SDK_EVERY
(default 10) per provider also goes through that provider's official SDK to a
recording loopback server, which must receive exactly our body at our path (as
in tests/providers/test_sdk_acceptance.py; for Converse, botocore's
bedrock-runtime client, which checks the parameters against its service model).
The run prints its counts (pytest -s).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ServerFactory, fresh_postgres_database
from tests.providers.conformance import conformances
from tests.providers.fake_http import RecordingServer, recording_server
from tests.turn.generative import MODELS, PROVIDERS, Conversation, Stats

SEED = os.environ.get("PIONEER_GENERATIVE_SEED", "12")
CONVERSATIONS = int(os.environ.get("PIONEER_GENERATIVE_CONVERSATIONS", "200"))
PG_CONVERSATIONS = int(os.environ.get("PIONEER_GENERATIVE_PG_CONVERSATIONS", "20"))
HISTORIES = int(os.environ.get("PIONEER_GENERATIVE_HISTORIES", "2000"))
SDK_EVERY = int(os.environ.get("PIONEER_GENERATIVE_SDK_EVERY", "10"))
AT_ONCE = 8
SHM = "/dev/shm" if os.path.isdir("/dev/shm") else None


class Sdks:
    """Each provider's official SDK (its Conformance's `sdk_send`), pointed at the recording server."""

    def __init__(self, fake: RecordingServer) -> None:
        self.fake = fake

    def send(self, provider: int, body: dict[str, Any]) -> dict[str, Any]:
        """What the SDK put on the wire for our body, in the body's terms (Gemini keys in lowerCamelCase)."""
        conformance = conformances()[provider]
        conformance.sdk_send(self.fake.base_url, body, MODELS[provider])
        return conformance.wire_as_body(self.fake.last().json(), body)  # type: ignore[no-any-return]


def sdk_round_trips(stats: Stats) -> dict[str, int]:
    accepted: dict[str, int] = {}
    with recording_server() as fake:
        sdks = Sdks(fake)
        for provider, path, body in stats.sdk_sample:
            name = PROVIDERS[provider]
            try:
                wire = sdks.send(provider, body)
            except Exception as exc:  # the SDK refused the body: that is the finding
                stats.fail(f"sdk[{name}] refused", f"{type(exc).__name__}: {exc}")
                continue
            sent_to = fake.last().path.split("?")[0]
            if sent_to != path:
                stats.fail(f"sdk[{name}] sent it to another path", f"{sent_to} (ours: {path})")
                continue
            if wire != body:
                stats.fail(f"sdk[{name}] changed the body", json.dumps(body)[:300])
                continue
            accepted[name] = accepted.get(name, 0) + 1
    return accepted


@pytest.fixture(params=["sqlite", "postgres"])
async def generated_database(request: pytest.FixtureRequest) -> AsyncIterator[tuple[str, int]]:
    """(database URL, conversations to play). SQLite lives in memory-backed /dev/shm where there is
    one, since thousands of commits are waits on fsync otherwise (still a real SQLite file);
    PostgreSQL plays fewer conversations, to show the same rules hold there."""
    if request.param == "postgres":
        async with fresh_postgres_database() as url:
            yield url, PG_CONVERSATIONS
        return
    folder = Path(tempfile.mkdtemp(prefix="pioneer-gen-", dir=SHM))
    try:
        yield f"sqlite+aiosqlite:///{folder / 'gen.db'}", CONVERSATIONS
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def test_every_generated_round_renders_a_body_the_provider_accepts(
    generated_database: tuple[str, int], server_factory: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, conversations = generated_database
    server = await server_factory(database_url=url)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for name in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):  # botocore reads no local profile
        monkeypatch.setenv(name, os.devnull)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    stats = Stats()
    client = await server.client()  # one channel for all of them

    async def play(index: int) -> None:
        rng = random.Random(f"{SEED}-{index}")
        await Conversation(rng, client, stats, f"gen-{index}", SDK_EVERY).run()

    for start in range(0, conversations, AT_ONCE):
        await asyncio.gather(*(play(i) for i in range(start, min(start + AT_ONCE, conversations))))
    accepted = await asyncio.to_thread(sdk_round_trips, stats)
    report = stats.summary() + f"\nSDK round trips accepted per provider: {accepted}"
    print("\n" + report)
    assert stats.histories == conversations
    assert stats.histories_rendered >= HISTORIES * conversations // CONVERSATIONS, report
    assert stats.compared_with_scratch == stats.histories_rendered, report
    assert all(stats.bodies[name] > 0 for name in PROVIDERS.values()), report
    assert stats.bedrock_joined > 0, report  # Converse joining a history's results and a user message
    assert not stats.failures, report
