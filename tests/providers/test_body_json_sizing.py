"""How body_json sizes a value before one encoder call: the budget of PIECE_CHARS spent to the
character (a string costs its length and its quotes, a member or element 8, a scalar 8), and a large
body given to `encoded` never reaching the encoder whole.
"""

from __future__ import annotations

import types
from typing import Any

import orjson
import pytest

from pioneer_grpc.providers import body_json

P = body_json.PIECE_CHARS
SMALL = 8  # what a member, an element or a scalar costs


@pytest.mark.parametrize(
    ("value", "fits"),
    [
        (5, True),
        ("x" * (3 * P), True),  # a scalar is one call; a long string is sliced by _string_pieces
        ([], True),
        ({}, True),
        (["x" * (P - SMALL - 2)], True),  # the budget spent to exactly 0
        (["x" * (P - SMALL - 1)], False),
        (["x" * 1000, 1], True),
        ([0] * (P // SMALL), False),  # the container alone spends it all: its elements tip it
        ([0] * (P // SMALL + 1), False),
        ([0] * (P // (2 * SMALL)), True),  # each element counted as a member and as a scalar: 0 left
        ([0] * (P // (2 * SMALL) + 1), False),
        ({"k" * P: 0}, False),  # keys count
        ({"k" * (P - 2 * SMALL - 1): 0}, False),
        ({"k" * (P - 2 * SMALL - 2): 0}, True),
        ([[["x" * (P - 3 * SMALL - 2)]]], True),
        ([[["x" * (P - 3 * SMALL - 1)]]], False),
    ],
    ids=lambda v: repr(v)[:24] if not isinstance(v, bool) else str(v),
)
def test_a_value_fits_one_call_while_the_budget_is_not_overspent(value: Any, fits: bool) -> None:
    assert body_json._fits_one_call(value) is fits


def test_a_large_body_never_reaches_the_encoder_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[int] = []

    def dumps(value: Any) -> bytes:
        text = orjson.dumps(value)
        written.append(len(text))
        return text

    spy = types.SimpleNamespace(dumps=dumps, JSONEncodeError=orjson.JSONEncodeError)
    monkeypatch.setattr(body_json, "orjson", spy)
    body = {"model": "m", "messages": [{"role": "user", "content": "x" * 1000}] * 600}
    whole = orjson.dumps(body)
    assert body_json.encoded(body) == whole
    assert len(whole) > 2 * P
    assert max(written) <= P
    small = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    written.clear()
    assert body_json.encoded(small) == orjson.dumps(small)
    assert len(written) == 1
