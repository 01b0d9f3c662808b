"""PrepareTurn as a use case (service/turn.py) on the in-memory store: one call down to open the round,
one to commit it, and what a refusal, a change meanwhile or a history over its threshold do."""

from __future__ import annotations

import json

import pytest

from pioneer_grpc import reasons
from pioneer_grpc.errors import FailedPrecondition, InvalidArgument
from pioneer_grpc.service import history, rendered_rounds
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.turn import PreparedTurn, prepare_turn
from pioneer_grpc.v1 import (
    chat_pb2,
    history_pb2,
    manifest_service_pb2,
    prompt_pb2,
    provider_service_pb2,
    turn_service_pb2,
)
from tests.fast.conftest import Crossings, configured
from tests.fast.test_loads import LONG
from tests.store.contract.rows import answer, batch, call, result, user

P = provider_service_pb2
ROUND = ["rounds.open", "rounds.commit"]


def _request(
    turn_id: str, *entries: history_pb2.ConversationEntry, **fields: object
) -> turn_service_pb2.PrepareTurnRequest:
    request = turn_service_pb2.PrepareTurnRequest(
        thread_id="t",
        turn_id=turn_id,
        new_entries=list(entries),
        compile_input=prompt_pb2.PromptCompileInput(
            profile=prompt_pb2.PROMPT_PROFILE_FULL, extra_system="Be brief."
        ),
        **fields,  # type: ignore[arg-type]
    )
    for entry in request.new_entries:
        entry.turn_id = ""
    return request


async def _thread(
    ctx: ServiceContext, turns: int = 3, model: str = "claude-sonnet-4-5", **config: int
) -> None:
    await history.create_thread(ctx, "t", history_pb2.ThreadConfig(model=model, **config))
    for n in range(turns):
        await history.complete_turn(
            ctx, "t", f"s{n}", [user(f"q{n}", "", f"Q{n}: {LONG}"), answer(f"a{n}", "", LONG)]
        )


async def test_a_round_goes_down_into_the_store_twice_whatever_is_kept(
    ctx: ServiceContext, crossings: Crossings
) -> None:
    await _thread(ctx)
    ctx.load_cache.clear()
    crossings.clear()
    first = await prepare_turn(ctx, _request("u1", user("q", "", "Read a.txt")))
    assert crossings.calls == ROUND  # nothing kept: the store read the history whole in the open
    assert [m.content for m in first.chat_request.messages][-1] == "Read a.txt"
    crossings.clear()
    second = await prepare_turn(ctx, _request("u1", call("c", "", "c1"), result("r", "", "c1")))
    assert crossings.calls == ROUND  # the kept history, as it was
    assert len(second.current) == 3
    await history.complete_turn(ctx, "t", "u1", [answer("a", "", "It says hello.")])
    crossings.clear()
    third = await prepare_turn(ctx, _request("u2", user("q-u2", "", "Thanks")))
    assert crossings.calls == ROUND  # the kept history brought current by the completed turn
    assert [m.content for m in third.chat_request.messages][-2:] == ["It says hello.", "Thanks"]


async def test_a_round_answers_the_request_its_history_and_the_manifest_event(ctx: ServiceContext) -> None:
    await _thread(ctx, turns=1)
    watching = ctx.hub.subscribe("t", capacity=10)
    prepared = await prepare_turn(
        ctx, _request("u1", user("q", "", "Hi"), provider=P.PROVIDER_ANTHROPIC_MESSAGES)
    )
    assert prepared.manifest_event_id > 0
    body = json.loads(bytes(prepared.rendered.body))  # type: ignore[union-attr]
    assert body["model"] == "claude-sonnet-4-5" and "Hi" in json.dumps(body["messages"][-1])
    assert prepared.history_report.decision == history_pb2.HISTORY_DECISION_FULL
    event = await watching.next(wait_seconds=5)
    assert event is not None and event.event.event_id == prepared.manifest_event_id
    again = await prepare_turn(ctx, _request("u1", user("q", "", "Hi")))
    assert again.manifest_event_id == prepared.manifest_event_id  # the same manifest: no new event
    assert await watching.next(wait_seconds=0.05) is None


@pytest.mark.parametrize("provider", [p for p in P.Provider.values() if p != P.PROVIDER_UNSPECIFIED])
async def test_every_provider_gets_its_body(ctx: ServiceContext, provider: int) -> None:
    await _thread(ctx, turns=1)
    prepared = await prepare_turn(ctx, _request("u1", user("q", "", "Hi"), provider=provider))
    assert prepared.rendered is not None and json.loads(bytes(prepared.rendered.body))


async def test_a_call_without_its_result_stores_nothing(ctx: ServiceContext, crossings: Crossings) -> None:
    await _thread(ctx, turns=1)
    crossings.clear()
    with pytest.raises(FailedPrecondition) as refused:
        await prepare_turn(ctx, _request("u1", user("q", "", "Read it"), call("c", "", "c1")))
    assert refused.value.reason == reasons.TOOL_RESULTS_PENDING
    assert crossings.calls == ["rounds.open"]  # refused before the commit
    turns, _ = await ctx.store.listing.turns("t", None, 10)
    assert [t.turn_id for t in turns] == ["s0"]
    assert await ctx.store.manifests.newest_event_id() == 0


async def test_a_body_the_provider_refuses_stores_nothing(ctx: ServiceContext) -> None:
    await _thread(ctx, turns=1, model="claude-opus-5-5")
    request = _request("u1", user("q", "", "Hi"), provider=P.PROVIDER_ANTHROPIC_MESSAGES)
    request.tools.add(name="get_weather", description="Weather")
    request.tool_choice.mode = chat_pb2.TOOL_CHOICE_MODE_REQUIRED  # this model family refuses it
    with pytest.raises(InvalidArgument):
        await prepare_turn(ctx, request)
    assert (await history.get_thread(ctx, "t")).entry_count == 2


async def test_a_thread_without_a_model_needs_one_in_the_request(ctx: ServiceContext) -> None:
    await _thread(ctx, turns=0, model="")
    with pytest.raises(InvalidArgument) as refused:
        await prepare_turn(ctx, _request("u1", user("q", "", "Hi")))
    assert refused.value.reason == reasons.MODEL_REQUIRED
    prepared = await prepare_turn(ctx, _request("u1", user("q", "", "Hi"), model="gpt-4o"))
    assert prepared.chat_request.model == "gpt-4o"


async def test_a_thread_changed_before_the_commit_opens_the_round_again(
    ctx: ServiceContext, crossings: Crossings, monkeypatch
) -> None:
    await _thread(ctx, turns=1)
    open_round = ctx.store.rounds.open
    changed: list[str] = []

    async def open_then_another_writer_appends(ask):  # type: ignore[no-untyped-def]
        opened = await open_round(ask)
        if not changed:
            changed.append("x")
            other = batch("t", user("x1", "other-turn", "meanwhile"), tokenizer="claude_estimate")
            await ctx.store.entries.append(other)
        return opened

    monkeypatch.setattr(ctx.store.rounds, "open", open_then_another_writer_appends)
    crossings.clear()
    prepared = await prepare_turn(ctx, _request("u1", user("q", "", "Hi")))
    # The commit found the thread changed (the other writer's append): nothing written, opened again.
    assert [c for c in crossings.calls if c.startswith("rounds.")] == [*ROUND, *ROUND]
    assert [d.code for d in prepared.history_report.diagnostics] == ["incomplete_turns_left_out"]
    assert (await history.get_thread(ctx, "t")).entry_count == 4


async def test_a_history_over_its_threshold_is_settled_before_the_round(ctx: ServiceContext) -> None:
    await _thread(ctx, turns=12, max_context_tokens=3000, response_reserve_tokens=1000)
    prepared = await prepare_turn(ctx, _request("u1", user("q", "", "Hi")))
    report = prepared.history_report
    assert report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED
    assert report.summary_use == history_pb2.SUMMARY_USE_CREATED
    assert prepared.chat_request.messages[0].content.startswith("Summary of earlier conversation:")


async def test_rounds_are_kept_when_the_server_is_asked_to(ctx: ServiceContext) -> None:
    kept = configured(ctx, keep_rendered_requests=True)
    await _thread(kept, turns=1)
    prepared: PreparedTurn = await prepare_turn(
        kept, _request("u1", user("q", "", "Hi"), provider=P.PROVIDER_OPENAI_CHAT_COMPLETIONS)
    )
    listed = await rendered_rounds.list_rendered_rounds(
        kept, manifest_service_pb2.ListRenderedRoundsRequest(thread_id="t", turn_id="u1")
    )
    assert listed.kept and [r.round for r in listed.rounds] == [1]
    assert listed.rounds[0].manifest_event_id == prepared.manifest_event_id
    assert json.loads(listed.rounds[0].provider_body_json)["model"] == "claude-sonnet-4-5"


async def _short_turns(ctx: ServiceContext, first: int, count: int) -> None:
    for n in range(first, first + count):
        await history.complete_turn(
            ctx, "t", f"s{n}", [user(f"q{n}", "", f"question {n}"), answer(f"a{n}", "", "ok")]
        )


async def test_a_round_past_the_turn_limit_goes_down_twice(ctx: ServiceContext, crossings: Crossings) -> None:
    """At MAX_LOADED_TURNS the history is compacted down to LOW_WATER_TURNS beside a summary; each
    round after it brings the kept history current with the turn completed before it, never reading
    it whole again."""
    from pioneer_grpc.history.budget import LOW_WATER_TURNS, MAX_LOADED_TURNS

    await history.create_thread(ctx, "t", history_pb2.ThreadConfig(model="gpt-4o"))
    await _short_turns(ctx, 0, MAX_LOADED_TURNS + 2)
    await prepare_turn(ctx, _request("u1", user("x1", "", "go")))
    for n in range(3):
        await history.complete_turn(ctx, "t", f"u{n + 1}", [answer(f"y{n}", "", "done")])
        crossings.clear()
        prepared = await prepare_turn(ctx, _request(f"u{n + 2}", user(f"x{n + 2}", "", "go on")))
        assert crossings.calls == ROUND
        assert prepared.history_report.decision == history_pb2.HISTORY_DECISION_FULL
        messages = prepared.chat_request.messages
        assert messages[0].content.startswith("Summary of earlier conversation:")
        # The summary, the turns kept beside it, the turns completed since, the round's own message.
        assert len(messages) == 1 + 2 * LOW_WATER_TURNS + 2 * (n + 1) + 1
        assert messages[-2].content == "done"  # the turn completed just before


async def test_a_round_on_a_truncating_thread_goes_down_twice(
    ctx: ServiceContext, crossings: Crossings
) -> None:
    """The first round over the threshold leaves the older turns out by a mark; the rounds after it
    extend what the mark left, going down to open and to commit only."""
    await _thread(
        ctx,
        turns=12,
        max_context_tokens=3000,
        response_reserve_tokens=1000,
        compaction_strategy=history_pb2.COMPACTION_STRATEGY_TRUNCATE,
    )
    first = await prepare_turn(ctx, _request("u1", user("x1", "", "go")))
    assert first.history_report.decision == history_pb2.HISTORY_DECISION_TRUNCATED
    mark = await history.get_summary(ctx, "t")
    assert mark is not None and mark.summarizer == "truncate" and not mark.text
    for n in range(3):
        await history.complete_turn(ctx, "t", f"u{n + 1}", [answer(f"y{n}", "", f"done {LONG}")])
        crossings.clear()
        prepared = await prepare_turn(ctx, _request(f"u{n + 2}", user(f"x{n + 2}", "", "go on")))
        assert crossings.calls == ROUND
        assert prepared.history_report.decision == history_pb2.HISTORY_DECISION_FULL
        assert len(prepared.chat_request.messages) == len(first.chat_request.messages) + 2 * (n + 1)
