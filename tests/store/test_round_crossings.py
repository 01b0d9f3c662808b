"""A PrepareTurn round goes down into the real stores twice, once to open and once to commit, as
it does into the in-memory one (tests/fast/test_rounds.py): whatever the kept history holds."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pioneer_grpc.adapters import build_summarizer
from pioneer_grpc.compiler.seed import ensure_bootstrap_files
from pioneer_grpc.config import Config
from pioneer_grpc.events.hub import ManifestHub
from pioneer_grpc.models.registry import packaged_registry
from pioneer_grpc.service import history
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.turn import prepare_turn
from pioneer_grpc.store.engine import create_engine
from pioneer_grpc.store.sql import open_store
from pioneer_grpc.v1 import history_pb2, prompt_pb2, turn_service_pb2
from tests.crossings import Crossings, counted
from tests.store.contract.rows import answer, call, result, user

ROUND = ["rounds.open", "rounds.commit"]
LONG = "We decided to use Postgres for the service and kept the rollout plan as agreed. " * 4


@pytest.fixture
async def counted_ctx(database_url: str, tmp_path: Path) -> AsyncIterator[tuple[ServiceContext, Crossings]]:
    home = tmp_path / "home"
    home.mkdir()
    ensure_bootstrap_files(home)
    models = packaged_registry()
    crossings = Crossings()
    store = counted(open_store(create_engine(database_url), models.tokenizer_of), crossings)
    hub = ManifestHub(store.manifests, poll_seconds=3600)
    await hub.start()
    ctx = ServiceContext(
        config=Config(listen="127.0.0.1:0", home=home),
        root_store=store,
        hub=hub,
        summarizer=build_summarizer("extractive"),
        models=models,
    )
    yield ctx, crossings
    await hub.close()
    await store.close()


def _request(turn_id: str, *entries: history_pb2.ConversationEntry) -> turn_service_pb2.PrepareTurnRequest:
    return turn_service_pb2.PrepareTurnRequest(
        thread_id="t",
        turn_id=turn_id,
        new_entries=list(entries),
        compile_input=prompt_pb2.PromptCompileInput(profile=prompt_pb2.PROMPT_PROFILE_FULL),
    )


async def test_a_round_goes_down_into_the_store_twice(counted_ctx: tuple[ServiceContext, Crossings]) -> None:
    ctx, crossings = counted_ctx
    await history.create_thread(ctx, "t", history_pb2.ThreadConfig(model="claude-sonnet-4-5"))
    for n in range(3):
        await history.complete_turn(ctx, "t", f"s{n}", [user(f"q{n}", "", LONG), answer(f"a{n}", "", LONG)])
    ctx.load_cache.clear()
    crossings.clear()
    first = await prepare_turn(ctx, _request("u1", user("q", "", "Read a.txt")))
    assert crossings.calls == ROUND  # nothing kept: the open read the history whole
    assert first.chat_request.messages[-1].content == "Read a.txt"
    crossings.clear()
    second = await prepare_turn(ctx, _request("u1", call("c", "", "c1"), result("r", "", "c1")))
    assert crossings.calls == ROUND  # the kept history, as it was
    assert len(second.current) == 3
    await history.complete_turn(ctx, "t", "u1", [answer("a", "", "It says hello.")])
    crossings.clear()
    third = await prepare_turn(ctx, _request("u2", user("q-u2", "", "Thanks")))
    assert crossings.calls == ROUND  # the kept history brought current by the completed turn
    assert [m.content for m in third.chat_request.messages][-2:] == ["It says hello.", "Thanks"]
