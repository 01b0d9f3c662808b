"""One encoder writes every body: in pieces or in one call, the text is orjson's, and no piece is large."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pioneer_grpc.providers import body_json
from pioneer_grpc.providers.common import dumps, parse_arguments


def _reference(value: Any) -> str:
    return orjson.dumps(value).decode()


_leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(exclude_categories=["Cs"]))
)
_values = st.recursive(
    _leaves, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5)
)


@settings(max_examples=300, deadline=None)
@given(_values)
def test_pieces_join_to_what_one_call_writes(value: Any) -> None:
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
    assert b"".join(pieces).decode() == _reference(body)
    # A piece is one encoder call: escaping can grow PIECE_CHARS characters six times at most.
    assert max(len(piece) for piece in pieces) <= 6 * body_json.PIECE_CHARS
    assert len(pieces) > 20


def test_nan_never_reaches_a_body() -> None:
    # orjson would write NaN as null: the numbers a body takes are refused first.
    for arguments in ('{"a": NaN}', '{"a": Infinity}', '{"a": 1e400}'):
        with pytest.raises(ValueError):
            parse_arguments(arguments)


def test_small_bodies_keep_one_call_and_large_ones_use_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    monkeypatch.setattr(body_json, "encoded", lambda value: calls.append(value) or orjson.dumps(value))
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
def test_strings_are_written_the_same_in_one_call_and_in_pieces(text: str) -> None:
    body = {"text": text, "list": [text, {"k": text}], text: True}
    assert dumps(body) == _reference(body) == dumps(body, source_bytes=10_000_000)


FLOATS = [0.1, -0.0, 1e16, 1e300, 5e-324, 1e-7, 1.5e-5, 2.5e-10, 123456789012345680000.0]


def test_numbers_and_key_order_do_not_depend_on_the_body_size() -> None:
    body = {"z": 1, "a": [0, -1, 2**63 - 1, -(2**63), *FLOATS], "m": None, "b": False}
    small = dumps(body)
    assert small == _reference(body)
    assert small.startswith('{"z":1,"a":')
    # The same numbers in a body past the one-call size, written in pieces: the same text.
    assert dumps(body, source_bytes=10_000_000) == small
    assert '"a":[0,-1,9223372036854775807,-9223372036854775808,0.1,-0.0,1e16' in small.replace(
        "1e+16", "1e16"
    )
    assert ",1e-7," in small
    large = {"pad": "x" * (3 * body_json.PIECE_CHARS), **body}
    assert dumps(large, source_bytes=10_000_000).endswith(small[1:])


def test_integers_past_64_bits_are_written_in_pieces() -> None:
    body = {"n": 2**64, "m": -(2**70), "f": 1e-7, "ok": [2**63 - 1]}
    expected = '{"n":18446744073709551616,"m":-1180591620717411303424,"f":1e-7,"ok":[9223372036854775807]}'
    assert dumps(body) == expected == dumps(body, source_bytes=10_000_000)
