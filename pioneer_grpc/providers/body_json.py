"""A body's JSON text, written in bounded steps.

`json.dumps` encodes a whole body in one C call that holds the GIL from start
to end: for a body at the request caps (about 12 MB) that is tens of
milliseconds in which no other thread, the event loop included, runs. Here a
value small enough is still encoded in one call, and a larger one is taken
apart (objects by member, arrays by element, long strings by slice), so no
single call handles more than about PIECE_CHARS characters. The text is the
same as `json.dumps` with the same options would write.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

# Characters one encoder call may handle: about a millisecond of work.
PIECE_CHARS = 1 << 18

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_encode_string = json.encoder.encode_basestring  # the C function json.dumps uses with ensure_ascii=False
# What a number, a literal or a member's punctuation is counted as when sizing a value.
_SMALL_VALUE_CHARS = 8


def dumps(value: Any) -> str:
    """Compact, UTF-8 (no \\u escapes but the required ones), keys in insertion order, no NaN."""
    return "".join(_pieces(value))


def encoded(value: Any) -> bytes:
    """`dumps(value)` as UTF-8, a slice at a time (no one call encodes the whole body)."""
    text = dumps(value)
    return b"".join(
        text[start : start + PIECE_CHARS].encode("utf-8") for start in range(0, len(text), PIECE_CHARS)
    )


def _pieces(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield from _string_pieces(value)
    elif _fits_one_call(value):
        yield _ENCODER.encode(value)
    elif isinstance(value, dict):
        yield from _object_pieces(value)
    else:
        yield from _array_pieces(value)


def _string_pieces(text: str) -> Iterator[str]:
    if len(text) <= PIECE_CHARS:
        yield _encode_string(text)
        return
    # Escaping is per character, so slices escaped apart join to the escaped whole.
    yield '"'
    for start in range(0, len(text), PIECE_CHARS):
        yield _encode_string(text[start : start + PIECE_CHARS])[1:-1]
    yield '"'


def _object_pieces(members: dict[str, Any]) -> Iterator[str]:
    yield "{"
    for index, (key, member) in enumerate(members.items()):
        yield ("," if index else "") + _encode_string(key) + ":"
        yield from _pieces(member)
    yield "}"


def _array_pieces(elements: list[Any] | tuple[Any, ...]) -> Iterator[str]:
    yield "["
    for index, element in enumerate(elements):
        if index:
            yield ","
        yield from _pieces(element)
    yield "]"


def _fits_one_call(value: Any) -> bool:
    """Whether `value` is a scalar, or a container of about PIECE_CHARS at most (or one not taken apart).

    Sizing stops as soon as the budget is spent, so a large value costs a look at its first
    PIECE_CHARS characters only.
    """
    if not isinstance(value, (dict, list, tuple)):
        return True
    if isinstance(value, dict) and not all(isinstance(key, str) for key in value):
        return True  # non-string keys are json.dumps's to convert
    budget = PIECE_CHARS
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            budget -= len(item) + 2
        elif isinstance(item, (dict, list, tuple)):
            budget -= _SMALL_VALUE_CHARS * len(item)
            if budget >= 0:
                pending.extend(item.keys() if isinstance(item, dict) else ())
                pending.extend(item.values() if isinstance(item, dict) else item)
        else:
            budget -= _SMALL_VALUE_CHARS
        if budget < 0:
            return False
    return True
