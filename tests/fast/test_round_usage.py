"""A loop reports the provider's usage of each round with its next call; it reads back per round."""

from __future__ import annotations

import pytest

from pioneer_grpc import reasons
from pioneer_grpc.errors import FailedPrecondition, InvalidArgument, NotFound
from pioneer_grpc.models.registry import packaged_registry
from pioneer_grpc.providers.cache_model import input_cost
from pioneer_grpc.service import history, lifecycle, round_usage
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.turn import prepare_turn
from pioneer_grpc.telemetry import Telemetry
from pioneer_grpc.telemetry.metrics import Metrics
from pioneer_grpc.v1 import history_pb2, manifest_service_pb2, usage_pb2
from tests.fast.test_rounds import P, _request, _thread
from tests.store.contract.rows import answer, call, result, user

USAGE = usage_pb2.ProviderUsage(
    input_tokens=12_000, cache_read_input_tokens=9_000, cache_write_input_tokens=2_000, output_tokens=80
)


async def _rounds(ctx: ServiceContext) -> list[usage_pb2.RoundUsage]:
    answer_ = await round_usage.list_round_usage(
        ctx, manifest_service_pb2.ListRoundUsageRequest(thread_id="t")
    )
    return list(answer_.rounds)


async def test_each_round_gets_the_usage_reported_with_the_next_call(ctx: ServiceContext) -> None:
    await _thread(ctx, turns=12)
    anthropic = P.PROVIDER_ANTHROPIC_MESSAGES
    first = await prepare_turn(ctx, _request("u1", user("q", "", "Read a.txt"), provider=anthropic))
    second = await prepare_turn(
        ctx,
        _request(
            "u1", call("c", "", "c1"), result("r", "", "c1"), provider=anthropic, previous_round_usage=USAGE
        ),
    )
    later = usage_pb2.ProviderUsage(input_tokens=12_400, cache_read_input_tokens=11_000, output_tokens=20)
    await history.complete_turn(ctx, "t", "u1", [answer("a", "", "It says hello.")], later)
    newest, oldest = await _rounds(ctx)
    assert (oldest.turn_id, oldest.manifest_event_id, oldest.turn_message_count) == (
        "u1",
        first.manifest_event_id,
        1,
    )
    assert (newest.manifest_event_id, newest.turn_message_count) == (second.manifest_event_id, 3)
    assert oldest.reported == USAGE and newest.reported == later
    assert not newest.reported.HasField("cache_write_input_tokens")
    assert oldest.provider == anthropic and oldest.model == "claude-sonnet-4-5"
    prices = packaged_registry().lookup("claude-sonnet-4-5").prices  # type: ignore[union-attr]
    assert prices is not None
    assert oldest.reported_input_cost_usd == pytest.approx(input_cost(prices, 12_000, 9_000, 2_000))
    assert newest.reported_input_cost_usd == pytest.approx(input_cost(prices, 12_400, 11_000, 0))
    # The expected side, from the bodies the server rendered: the first round follows no round of
    # its own here; the second's body carries a tool definition for its call, which the first's did
    # not: nothing of the first is read.
    assert oldest.expected_input_tokens > 0 and oldest.expected_cache_read_input_tokens == 0
    assert newest.expected_cache_read_input_tokens == 0
    # The next turn's round reads the prefix the round before it wrote.
    await prepare_turn(ctx, _request("u2", user("thanks", "", "Thanks"), provider=anthropic))
    await history.complete_turn(ctx, "t", "u2", [answer("welcome", "", "Welcome")], USAGE)
    third = (await _rounds(ctx))[0]
    assert 0 < third.expected_cache_read_input_tokens < third.expected_input_tokens
    assert third.expected_input_cost_usd == pytest.approx(
        input_cost(
            prices,
            third.expected_input_tokens,
            third.expected_cache_read_input_tokens,
            third.expected_cache_write_input_tokens,
        )
    )


async def test_a_round_reported_again_is_replaced(ctx: ServiceContext) -> None:
    await _thread(ctx, turns=1)
    await prepare_turn(ctx, _request("u1", user("q", "", "Hi")))
    await history.complete_turn(ctx, "t", "u1", [answer("a", "", "Hello")], USAGE)
    again = usage_pb2.ProviderUsage(input_tokens=100, output_tokens=1)
    await history.complete_turn(ctx, "t", "u1", [answer("a", "", "Hello")], again)
    [only] = await _rounds(ctx)
    assert only.reported == again
    # No provider named: nothing expected, the model's prices still cost what was reported.
    assert not only.HasField("expected_input_tokens") and only.HasField("reported_input_cost_usd")


async def test_the_break_of_a_round_is_stored_with_its_usage(ctx: ServiceContext) -> None:
    await _thread(ctx, turns=1)
    await prepare_turn(ctx, _request("u1", user("q", "", "Hi"), provider=P.PROVIDER_OPENAI_CHAT_COMPLETIONS))
    await history.complete_turn(ctx, "t", "u1", [answer("a", "", "Hello")])
    request = _request("u2", user("q2", "", "More"), provider=P.PROVIDER_ANTHROPIC_MESSAGES)
    prepared = await prepare_turn(ctx, request)
    assert prepared.history_report.HasField("prefix_break")
    await history.complete_turn(ctx, "t", "u2", [answer("a2", "", "Sure")], USAGE)
    [found] = await _rounds(ctx)
    assert found.prefix_break == prepared.history_report.prefix_break
    assert found.prefix_break.cause == history_pb2.PREFIX_BREAK_CAUSE_RENDERING


@pytest.mark.parametrize(
    ("usage", "field"),
    [
        (usage_pb2.ProviderUsage(input_tokens=10, cache_read_input_tokens=11), "cache_read_input_tokens"),
        (
            usage_pb2.ProviderUsage(input_tokens=10, cache_read_input_tokens=6, cache_write_input_tokens=5),
            "cache_write_input_tokens",
        ),
        (usage_pb2.ProviderUsage(input_tokens=-1), "input_tokens"),
        (usage_pb2.ProviderUsage(output_tokens=3, reasoning_output_tokens=4), "reasoning_output_tokens"),
    ],
)
async def test_usage_past_its_whole_is_refused_and_nothing_is_stored(
    ctx: ServiceContext, usage: usage_pb2.ProviderUsage, field: str
) -> None:
    await _thread(ctx, turns=1)
    await prepare_turn(ctx, _request("u1", user("q", "", "Hi")))
    with pytest.raises(InvalidArgument) as refused:
        await prepare_turn(
            ctx, _request("u1", call("c", "", "c1"), result("r", "", "c1"), previous_round_usage=usage)
        )
    assert f"previous_round_usage.{field}" in [v.field for v in refused.value.violations]
    with pytest.raises(InvalidArgument):
        await history.complete_turn(ctx, "t", "u1", [answer("a", "", "Hello")], usage)
    assert await _rounds(ctx) == []
    turns = await ctx.store.listing.turns("t", None, 10)
    assert [t.status for t in turns[0] if t.turn_id == "u1"] == [history_pb2.TURN_STATUS_IN_PROGRESS]


async def test_usage_on_a_turn_without_a_round_is_a_failed_precondition(ctx: ServiceContext) -> None:
    await _thread(ctx, turns=1)
    with pytest.raises(FailedPrecondition) as refused:
        await prepare_turn(ctx, _request("u9", user("q", "", "Hi"), previous_round_usage=USAGE))
    assert refused.value.reason == reasons.NO_PREVIOUS_ROUND
    assert await ctx.store.listing.entries("t", "u9", 0, 10) == ([], False)
    with pytest.raises(NotFound):
        await round_usage.list_round_usage(ctx, manifest_service_pb2.ListRoundUsageRequest(thread_id="none"))


async def test_a_thread_or_turn_made_again_under_its_id_has_had_no_round(ctx: ServiceContext) -> None:
    await _thread(ctx, turns=1)
    await prepare_turn(ctx, _request("u1", user("q", "", "Hi")))
    await lifecycle.abandon_turn(ctx, "t", "u1")
    assert ctx.recent_rounds.last(("default", "t")) is None and ctx.recent_rounds.kept_bytes == 0
    with pytest.raises(FailedPrecondition) as refused:
        await prepare_turn(ctx, _request("u1", user("q", "", "Hi"), previous_round_usage=USAGE))
    assert refused.value.reason == reasons.NO_PREVIOUS_ROUND
    await prepare_turn(ctx, _request("u1", user("q", "", "Hi")))
    await lifecycle.delete_thread(ctx, "t")
    assert ctx.recent_rounds.last(("default", "t")) is None and ctx.recent_rounds.kept_bytes == 0
    await _thread(ctx, turns=1)
    with pytest.raises(FailedPrecondition) as refused:
        await prepare_turn(ctx, _request("u1", user("q", "", "Hi"), previous_round_usage=USAGE))
    assert refused.value.reason == reasons.NO_PREVIOUS_ROUND


async def test_the_counters_take_each_part_by_provider_and_bounded_model(ctx: ServiceContext) -> None:
    metrics = Metrics()
    ctx.telemetry = Telemetry(metrics=metrics)
    await _thread(ctx, turns=1)
    await prepare_turn(ctx, _request("u1", user("q", "", "Hi"), provider=P.PROVIDER_ANTHROPIC_MESSAGES))
    await history.complete_turn(ctx, "t", "u1", [answer("a", "", "Hello")], USAGE)
    await prepare_turn(ctx, _request("u2", user("q2", "", "Hi"), model="house-model-7"))
    await history.complete_turn(ctx, "t", "u2", [answer("a2", "", "Hello")], USAGE)

    def value(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(name, labels)

    known = {"provider": "anthropic_messages", "model": "claude-sonnet-4-5"}
    assert value("pioneer_provider_input_tokens_total", **known, kind="cache_read") == 9_000
    assert value("pioneer_provider_input_tokens_total", **known, kind="cache_write") == 2_000
    assert value("pioneer_provider_input_tokens_total", **known, kind="uncached") == 1_000
    assert value("pioneer_provider_output_tokens_total", **known) == 80
    other = {"provider": "unknown", "model": "other"}
    assert value("pioneer_provider_input_tokens_total", **other, kind="cache_read") == 9_000
