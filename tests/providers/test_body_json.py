"""A body written in pieces is the text json.dumps writes, and no piece is large."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pioneer_grpc.providers import body_json
from pioneer_grpc.providers.common import dumps, parse_arguments


def _reference(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(exclude_categories=["Cs"]))
)
_values = st.recursive(
    _leaves, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5)
)


@settings(max_examples=300, deadline=None)
@given(_values)
def test_pieces_join_to_what_json_dumps_writes(value: Any) -> None:
    original = body_json.PIECE_CHARS
    body_json.PIECE_CHARS = 3  # every container taken apart, every string sliced
    try:
        assert body_json.dumps(value) == _reference(value)
    finally:
        body_json.PIECE_CHARS = original


def test_a_large_body_is_written_in_bounded_pieces() -> None:
    text = 'é"\\\n日' * 200_000  # escapes and multi-byte characters
    body = {"model": "m", "messages": [{"role": "user", "content": text}] * 20, "tail": text * 5}
    pieces = list(body_json._pieces(body))
    assert "".join(pieces) == _reference(body)
    # A piece is one encoder call: escaping can grow PIECE_CHARS characters six times at most.
    assert max(len(piece) for piece in pieces) <= 6 * body_json.PIECE_CHARS
    assert len(pieces) > 20


def test_nan_is_refused_in_pieces_and_never_reaches_a_body() -> None:
    with pytest.raises(ValueError):
        body_json.dumps({"a": [float("nan"), "x" * body_json.PIECE_CHARS]})
    # orjson would write NaN as null: the numbers a body takes are refused first.
    for arguments in ('{"a": NaN}', '{"a": Infinity}', '{"a": 1e400}'):
        with pytest.raises(ValueError):
            parse_arguments(arguments)


def test_small_bodies_keep_one_call_and_large_ones_use_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    monkeypatch.setattr(body_json, "dumps", lambda value: calls.append(value) or _reference(value))
    body = {"model": "m"}
    assert dumps(body, source_bytes=100) == _reference(body)
    assert not calls
    assert dumps(body, source_bytes=10_000_000) == _reference(body)
    assert calls == [body]


TEXTS = [
    "plain",
    'quote " backslash \\ slash /',
    "".join(chr(c) for c in range(0x20)) + "\x7f",
    "line\u2028separator\u2029paragraph",
    "naïve café 東京 🚗 \U0010ffff",
    "\ufeff byte order mark",
]


@pytest.mark.parametrize("text", TEXTS)
def test_one_call_bodies_are_written_as_the_standard_encoder_writes_them(text: str) -> None:
    body = {"text": text, "list": [text, {"k": text}], text: True}
    assert dumps(body) == _reference(body)


def test_numbers_and_key_order() -> None:
    body = {"z": 1, "a": [0, -1, 2**63 - 1, -(2**63), 0.1, -0.0, 1e16, 1e300, 5e-324], "m": None, "b": False}
    assert dumps(body) == _reference(body)
    assert dumps(body).startswith('{"z":1,"a":')


def test_integers_past_64_bits_are_written_in_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    monkeypatch.setattr(body_json, "dumps", lambda value: calls.append(value) or _reference(value))
    body = {"n": 2**64, "m": -(2**70)}
    assert dumps(body) == '{"n":18446744073709551616,"m":-1180591620717411303424}'
    assert calls == [body]
