"""The strict checkers can fail: each provider's on the bodies written by hand to break one of its
rules (`BROKEN` in tests/providers/<provider>/rules.py), and every registered provider has some."""

from __future__ import annotations

from typing import Any

import pytest

from pioneer_grpc.providers.specs import SPECS
from tests.providers.conformance import conformances
from tests.providers.strict import StrictViolation

CASES = [
    (provider, rule, body)
    for provider, conformance in conformances().items()
    for rule, body in conformance.broken
]


@pytest.mark.parametrize(
    ("provider", "rule", "body"), CASES, ids=[f"{SPECS[p].name}-{rule}" for p, rule, _ in CASES]
)
def test_a_body_breaking_a_rule_fails_that_rule(provider: int, rule: str, body: dict[str, Any]) -> None:
    with pytest.raises(StrictViolation) as info:
        conformances()[provider].strict(body)
    assert rule in info.value.rules, info.value.problems


def test_every_provider_shows_its_checker_failing() -> None:
    assert {p for p, _, _ in CASES} == set(conformances())
