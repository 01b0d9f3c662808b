"""The history budget and the numbers derived from it (facts sheet: History)."""

from __future__ import annotations

from dataclasses import dataclass

from pioneer_grpc.errors import FieldViolation

DEFAULT_MAX_CONTEXT_TOKENS = 128_000
DEFAULT_RESPONSE_RESERVE_TOKENS = 16_000
# Completed turns a load reads at most (the original's MAX_TURNS: its entries are whole turns).
MAX_LOADED_TURNS = 200
THRESHOLD_PERCENT = 80
TARGET_PERCENT = 10
# A summary may exceed its target by this factor before it is rejected: models
# aim for "about N tokens" and overshoot a little; 1.5x still keeps a summary
# far under the threshold (15% of the budget against 80%).
SUMMARY_TOLERANCE = 1.5


@dataclass(frozen=True)
class Budget:
    """`tokens` = max_context_tokens - response_reserve_tokens (never negative)."""

    tokens: int

    @classmethod
    def of(cls, max_context_tokens: int, response_reserve_tokens: int) -> Budget:
        return cls(max(0, max_context_tokens - response_reserve_tokens))

    @property
    def threshold(self) -> int:
        return self.tokens * THRESHOLD_PERCENT // 100

    @property
    def target(self) -> int:
        return self.tokens * TARGET_PERCENT // 100

    @property
    def summary_limit(self) -> int:
        """Largest accepted summary message, in tokens."""
        return int(self.target * SUMMARY_TOLERANCE)


def config_violations(
    max_context_tokens: int, response_reserve_tokens: int, prefix: str = "config."
) -> list[FieldViolation]:
    """What is wrong with a thread's budget settings, as field violations."""
    violations: list[FieldViolation] = []
    if max_context_tokens <= 0:
        violations.append(
            FieldViolation(f"{prefix}max_context_tokens", "must be a positive number of tokens")
        )
    if response_reserve_tokens <= 0:
        violations.append(
            FieldViolation(f"{prefix}response_reserve_tokens", "must be a positive number of tokens")
        )
    elif max_context_tokens > 0 and response_reserve_tokens >= max_context_tokens:
        violations.append(
            FieldViolation(
                f"{prefix}response_reserve_tokens",
                f"must be below max_context_tokens ({max_context_tokens}), got {response_reserve_tokens}",
            )
        )
    return violations
