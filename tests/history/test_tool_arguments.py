"""The append's rule for tool call arguments and the load's repair, case by case (pure)."""

from __future__ import annotations

import pytest

from pioneer_grpc.history.tool_arguments import arguments_problem, parse_arguments, repaired_arguments

WHY = "arguments must be JSON every provider accepts"


def nested(levels: int) -> list:
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"a": NaN}', f"{WHY}: NaN is not a JSON number"),
        ('{"a": [Infinity]}', f"{WHY}: Infinity is not a JSON number"),
        ('{"a": -Infinity}', f"{WHY}: -Infinity is not a JSON number"),
        ('{"a": 1e999}', f"{WHY}: the number 1e999 is beyond a double's range"),
        ('{"a": -2.5e308}', f"{WHY}: the number -2.5e308 is beyond a double's range"),
        (
            '{"a": ' + "9" * 400 + "}",
            f"{WHY}: the number 999999999999...(400 characters) is beyond a double's range",
        ),
        (
            '{"a": ' + "9" * 5000 + "}",
            f"{WHY}: the number 999999999999...(5,000 characters) is beyond a double's range",
        ),
        ('{"a": "x\\ud800"}', f"{WHY}: a string holds a lone surrogate escape \\ud800"),
        ('{"\\udfff": 1}', f"{WHY}: a string holds a lone surrogate escape \\udfff"),
        ('{"a": ["\\ude00\\ud83d"]}', f"{WHY}: a string holds a lone surrogate escape \\ude00"),
        ('{"a": ' + "[" * 65 + "]" * 65 + "}", f"{WHY}: they nest deeper than 64 levels"),
        ("[1]", "arguments must be a JSON object, not a JSON list"),
        (
            "{",
            "arguments must be a JSON object; not valid JSON: Expecting property name enclosed in double "
            "quotes at char 1",
        ),
    ],
)
def test_refused_with_the_reason(arguments, problem):
    assert arguments_problem(arguments) == problem


@pytest.mark.parametrize(
    ("arguments", "value"),
    [
        ("", {}),
        ("  ", {}),
        ('{"a": 1, "a": 2}', {"a": 2}),  # duplicate keys: valid JSON, the last one wins
        ('{"a": "\\ud83d\\ude00"}', {"a": "\U0001f600"}),  # a surrogate pair is one character
        ('{"a": 1e308, "b": 1e-400, "c": -0}', {"a": 1e308, "b": 0.0, "c": 0}),
        ('{"a": ' + "9" * 300 + "}", {"a": int("9" * 300)}),
        ('{"a": ' + "[" * 63 + "]" * 63 + "}", {"a": nested(63)}),  # 64 levels with the object
    ],
)
def test_accepted(arguments, value):
    assert arguments_problem(arguments) is None
    assert parse_arguments(arguments) == value


def test_repair_replaces_what_is_refused_and_keeps_the_rest():
    fixed, replaced = repaired_arguments(
        '{"n": NaN, "i": [-Infinity, 1], "big": 1e999, "int": ' + "8" * 5000 + ', "\\ud800k": "a\\udc00b", '
        '"ok": "\\ud83d\\ude00", "keep": 2.5}'
    )
    assert parse_arguments(fixed) == {
        "n": None,
        "i": [None, 1],
        "big": None,
        "int": None,
        "\ufffdk": "a\ufffdb",
        "ok": "\U0001f600",
        "keep": 2.5,
    }
    assert replaced == [
        "NaN",
        "-Infinity",
        "the number 1e999",
        "a 5,000-character integer",
        "a lone surrogate",
        "a lone surrogate",
    ]


@pytest.mark.parametrize("arguments", ["[NaN]", "{", '{"a": ' + "[" * 65 + "]" * 65 + "}"])
def test_what_is_not_an_object_is_not_repaired(arguments):
    assert repaired_arguments(arguments) is None
