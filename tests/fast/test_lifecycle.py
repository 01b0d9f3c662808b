"""AbandonTurn and DeleteThread as use cases: what a load and a round read afterwards."""

from __future__ import annotations

import json

import pytest

from pioneer_grpc import reasons
from pioneer_grpc.errors import FailedPrecondition, NotFound
from pioneer_grpc.service import history, lifecycle
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.history_load import load_history
from pioneer_grpc.service.turn import prepare_turn
from pioneer_grpc.v1 import history_pb2, prompt_pb2, provider_service_pb2, turn_service_pb2
from tests.store.contract.rows import answer, call, result, user

P = provider_service_pb2


def _round(
    thread_id: str, turn_id: str, *entries: history_pb2.ConversationEntry
) -> turn_service_pb2.PrepareTurnRequest:
    request = turn_service_pb2.PrepareTurnRequest(
        thread_id=thread_id,
        turn_id=turn_id,
        new_entries=list(entries),
        compile_input=prompt_pb2.PromptCompileInput(
            profile=prompt_pb2.PROMPT_PROFILE_FULL, extra_system="Be brief."
        ),
        provider=P.PROVIDER_ANTHROPIC_MESSAGES,
    )
    for entry in request.new_entries:
        entry.turn_id = ""
    return request


async def _history(ctx: ServiceContext, thread_id: str) -> None:
    await history.create_thread(ctx, thread_id, history_pb2.ThreadConfig(model="claude-sonnet-4-5"))
    for n in range(3):
        await history.complete_turn(
            ctx, thread_id, f"s{n}", [user(f"q{n}", "", f"Q{n}"), answer(f"a{n}", "", f"A{n}")]
        )


async def _seen(ctx: ServiceContext, thread_id: str) -> tuple[bytes, bytes, bytes]:
    """What a load and the next round read, as bytes."""
    messages, report = await load_history(ctx, thread_id, "u2")
    prepared = await prepare_turn(ctx, _round(thread_id, "u2", user("q-u2", "", "Next question")))
    assert prepared.rendered is not None
    loaded = b"".join(m.SerializeToString() for m in messages)
    return loaded, report.SerializeToString(deterministic=True), prepared.rendered.body


async def test_after_an_abandoned_turn_loads_and_rounds_are_those_of_a_thread_that_never_had_it(
    ctx: ServiceContext,
) -> None:
    await _history(ctx, "never")
    await _history(ctx, "abandoned")
    # The turn that fails for good: two rounds, a tool call and its result, all kept.
    await prepare_turn(ctx, _round("abandoned", "u1", user("q-u1", "", "Read a.txt")))
    await prepare_turn(ctx, _round("abandoned", "u1", call("c", "", "k1"), result("r", "", "k1")))
    before, _ = await load_history(ctx, "abandoned", "u2")
    assert len(ctx.load_cache) > 0  # a kept answer of the thread exists when the turn is dropped
    outcome = await lifecycle.abandon_turn(ctx, "abandoned", "u1")
    assert (outcome.abandoned, outcome.dropped_entry_count) == (True, 3)
    assert await _seen(ctx, "abandoned") == await _seen(ctx, "never")
    report = history_pb2.HistoryDecisionReport()
    report.ParseFromString((await _seen(ctx, "abandoned"))[1])
    assert not [d for d in report.diagnostics if d.code == "incomplete_turns_left_out"]
    assert [m.content for m in before][-1] == "A2"


async def test_abandon_refuses_a_completed_turn_and_is_idempotent_with_allow_missing(
    ctx: ServiceContext,
) -> None:
    await _history(ctx, "t")
    with pytest.raises(FailedPrecondition) as completed:
        await lifecycle.abandon_turn(ctx, "t", "s0")
    assert completed.value.reason == reasons.TURN_COMPLETED
    await prepare_turn(ctx, _round("t", "u1", user("q-u1", "", "Hello")))
    assert (await lifecycle.abandon_turn(ctx, "t", "u1", allow_missing=True)).abandoned
    again = await lifecycle.abandon_turn(ctx, "t", "u1", allow_missing=True)
    assert (again.abandoned, again.dropped_entry_count) == (False, 0)
    with pytest.raises(NotFound) as unknown:
        await lifecycle.abandon_turn(ctx, "t", "u1")
    assert unknown.value.reason == reasons.TURN_NOT_FOUND


async def test_a_deleted_thread_ends_its_watches_and_is_created_again_from_scratch(
    ctx: ServiceContext,
) -> None:
    await _history(ctx, "t")
    await _seen(ctx, "t")
    watching = ctx.hub.subscribe("t", capacity=10)
    other = ctx.hub.subscribe("other", capacity=10)
    assert await lifecycle.delete_thread(ctx, "t") is True
    final = await watching.next(1.0)
    assert final is not None and final.event.thread_deleted and final.event.thread_id == "t"
    assert await other.next(0.01) is None
    with pytest.raises(NotFound):
        await lifecycle.delete_thread(ctx, "t")
    assert await lifecycle.delete_thread(ctx, "t", allow_missing=True) is False
    await history.create_thread(ctx, "t", history_pb2.ThreadConfig(model="claude-sonnet-4-5"))
    messages, _ = await load_history(ctx, "t")
    assert messages == []
    body = json.loads((await _seen(ctx, "t"))[2])
    assert len(body["messages"]) == 1  # nothing of the thread before
    assert body["messages"][0]["content"][0] == {"type": "text", "text": "Next question"}
