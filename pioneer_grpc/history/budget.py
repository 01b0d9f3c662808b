"""The history budget and the numbers derived from it (facts sheet: History)."""

from __future__ import annotations

from dataclasses import dataclass

from pioneer_grpc.errors import FieldViolation

DEFAULT_MAX_CONTEXT_TOKENS = 128_000
DEFAULT_RESPONSE_RESERVE_TOKENS = 16_000
# Completed turns a load reads at most (the original's MAX_TURNS: its entries are whole turns).
# Reaching them compacts the history like the threshold does, down to LOW_WATER_TURNS.
MAX_LOADED_TURNS = 200
LOW_WATER_TURNS = MAX_LOADED_TURNS // 2
# Where compaction starts (ThreadConfig.compaction_trigger_percent), where it stops
# (compaction_low_water_percent) and the least clearing must free (clear_at_least_percent), in
# percent of the budget. The seed's policy starts at 80% and summarizes down to about 10%; the
# low-water mark and the least to clear are what `make bench` chose (docs/performance.md).
THRESHOLD_PERCENT = 80
DEFAULT_LOW_WATER_PERCENT = 30
DEFAULT_CLEAR_AT_LEAST_PERCENT = 40
TARGET_PERCENT = 10
# A summary may exceed its target by this factor before it is rejected: models
# aim for "about N tokens" and overshoot a little; 1.5x still keeps a summary
# far under the threshold (15% of the budget against 80%).
SUMMARY_TOLERANCE = 1.5


@dataclass(frozen=True)
class Budget:
    """`tokens` = max_context_tokens - response_reserve_tokens (never negative), and the thread's
    compaction marks in percent of it."""

    tokens: int
    trigger_percent: int = THRESHOLD_PERCENT
    low_water_percent: int = DEFAULT_LOW_WATER_PERCENT
    clear_at_least_percent: int = DEFAULT_CLEAR_AT_LEAST_PERCENT

    @classmethod
    def of(
        cls,
        max_context_tokens: int,
        response_reserve_tokens: int,
        trigger_percent: int | None = None,
        low_water_percent: int | None = None,
        clear_at_least_percent: int | None = None,
    ) -> Budget:
        """The budget of a thread's settings; None: the default of each mark."""
        return cls(
            max(0, max_context_tokens - response_reserve_tokens),
            THRESHOLD_PERCENT if trigger_percent is None else trigger_percent,
            DEFAULT_LOW_WATER_PERCENT if low_water_percent is None else low_water_percent,
            DEFAULT_CLEAR_AT_LEAST_PERCENT if clear_at_least_percent is None else clear_at_least_percent,
        )

    @property
    def threshold(self) -> int:
        """Where compaction starts (the trigger)."""
        return self.tokens * self.trigger_percent // 100

    @property
    def low_water(self) -> int:
        """What a compaction brings the history down to."""
        return min(self.tokens * self.low_water_percent // 100, max(0, self.threshold - 1))

    @property
    def clear_at_least(self) -> int:
        """The least tokens clearing must free to be worth its cache break."""
        return self.tokens * self.clear_at_least_percent // 100

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


def policy_violations(
    trigger_percent: int | None,
    low_water_percent: int | None,
    clear_at_least_percent: int | None,
    prefix: str = "config.",
) -> list[FieldViolation]:
    """What is wrong with a thread's compaction marks (None: the default), as field violations."""
    violations: list[FieldViolation] = []
    trigger = THRESHOLD_PERCENT if trigger_percent is None else trigger_percent
    if not 1 <= trigger <= 100:
        violations.append(
            FieldViolation(f"{prefix}compaction_trigger_percent", f"must be 1 to 100, got {trigger}")
        )
    low = DEFAULT_LOW_WATER_PERCENT if low_water_percent is None else low_water_percent
    if not 0 <= low < trigger:
        violations.append(
            FieldViolation(
                f"{prefix}compaction_low_water_percent",
                f"must be 0 to below the trigger ({trigger}), got {low}",
            )
        )
    if clear_at_least_percent is not None and not 0 <= clear_at_least_percent <= 100:
        violations.append(
            FieldViolation(
                f"{prefix}clear_at_least_percent", f"must be 0 to 100, got {clear_at_least_percent}"
            )
        )
    return violations
