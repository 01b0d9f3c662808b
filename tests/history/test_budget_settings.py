"""A thread's budget settings: what is refused and the numbers derived from them (budget.py)."""

from __future__ import annotations

from pioneer_grpc.history.budget import Budget, config_violations


def pairs(max_context: int, reserve: int, prefix: str = "config.") -> list[tuple[str, str]]:
    return [(v.field, v.description) for v in config_violations(max_context, reserve, prefix)]


def test_both_numbers_must_be_positive():
    assert pairs(0, 0) == [
        ("config.max_context_tokens", "must be a positive number of tokens"),
        ("config.response_reserve_tokens", "must be a positive number of tokens"),
    ]
    assert pairs(-5, 10, prefix="") == [("max_context_tokens", "must be a positive number of tokens")]
    assert pairs(100, -1) == [("config.response_reserve_tokens", "must be a positive number of tokens")]
    assert pairs(1, 0) == [("config.response_reserve_tokens", "must be a positive number of tokens")]


def test_the_reserve_must_leave_room_for_history():
    assert pairs(100, 100) == [
        ("config.response_reserve_tokens", "must be below max_context_tokens (100), got 100")
    ]
    assert pairs(100, 250, prefix="c.") == [
        ("c.response_reserve_tokens", "must be below max_context_tokens (100), got 250")
    ]
    assert pairs(100, 99) == []
    assert pairs(2, 1) == []


def test_threshold_target_and_summary_limit_follow_the_budget():
    budget = Budget.of(128_000, 16_000)
    assert (budget.tokens, budget.threshold, budget.target, budget.summary_limit) == (
        112_000,
        89_600,
        11_200,
        16_800,
    )
    assert Budget.of(100, 200).tokens == 0
    assert (Budget(999).threshold, Budget(999).target, Budget(999).summary_limit) == (799, 99, 148)
