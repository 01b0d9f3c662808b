"""The Claude estimate: its factors are the fit of the shipped corpus, and its error is what it states."""

from __future__ import annotations

import math

from pioneer_grpc.history.estimate import CLASSES, CLAUDE, GEMINI, MEASURED_ERROR, content_class
from pioneer_grpc.history.tokens import count_blocking, count_tokens, is_exact
from tests.history.corpus import frozen_corpus


def _base_counts() -> list[tuple[str, int, int, str]]:
    rows = frozen_corpus()
    bases = count_blocking([r["text"] for r in rows], CLAUDE.base)
    return [
        (content_class(r["text"]), b, r["claude_legacy"], r["text"]) for r, b in zip(rows, bases, strict=True)
    ]


def test_factors_are_the_corpus_fit():
    data = _base_counts()
    for name in CLASSES:
        reference = sum(d[2] for d in data if d[0] == name)
        base = sum(d[1] for d in data if d[0] == name)
        assert base > 0, f"no corpus text in class {name}"
        assert CLAUDE.factors[name] == round(reference / base, 3), name


def test_the_error_is_within_what_the_estimate_states():
    data = _base_counts()
    estimates = count_blocking([d[3] for d in data], CLAUDE.name)
    errors = sorted(abs(e - d[2]) / d[2] for e, d in zip(estimates, data, strict=True) if d[2] >= 20)
    stated = MEASURED_ERROR[CLAUDE.name]
    assert len(errors) >= 300
    assert errors[len(errors) // 2] <= stated["p50"]
    assert errors[math.ceil(0.95 * len(errors)) - 1] <= stated["p95"]
    assert errors[-1] <= stated["max"]
    total = sum(d[2] for d in data)
    assert abs(sum(estimates) - total) / total <= stated["total"]


def test_classes_follow_the_characters():
    assert content_class("The history is loaded once per round.") == "prose"
    assert content_class('{"a": [1, 2], "b": {"c": null}}') == "code"
    assert content_class("  1234 | 0.5678 | 9012") == "numeric"
    assert content_class("服务器只计算一次令牌数") == "cjk"
    assert content_class("Сервер считает токены") == "cyrillic_greek"
    assert content_class("يحسب الخادم الرموز") == "other_script"


async def test_estimates_are_named_not_exact():
    assert not is_exact(CLAUDE.name)
    assert not is_exact(GEMINI.name)
    assert is_exact("o200k_base")
    assert is_exact("cl100k_base")
    [claude, gemini, o200k] = [
        (await count_tokens(["hello world, this is a test"], name))[0]
        for name in (CLAUDE.name, GEMINI.name, "o200k_base")
    ]
    assert gemini == o200k
    assert claude >= 1
