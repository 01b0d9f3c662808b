"""A body's JSON text: one encoder (orjson) for every body, written in bounded steps when large.

Every body is written by orjson, so its text never depends on its size (a float is
`1e-7`, never `1e-07`, in a small body and a large one alike). One orjson call holds
the GIL from start to end: a value small enough is written in one call, and a larger
one is taken apart (objects by member, arrays by element, long strings by slice), so
no single call handles more than about PIECE_CHARS characters. Integers past 64 bits
(tool arguments may hold them), which orjson refuses, are written as Python writes
them, which is the same JSON integer. Numbers are finite by the time a body is
written (`common.parse_arguments`, `common.struct_to_dict`, the request checks):
orjson would write NaN as null.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

# Characters one encoder call may handle: well under a millisecond of work.
PIECE_CHARS = 1 << 18
# What a number, a literal or a member's punctuation is counted as when sizing a value.
_SMALL_VALUE_CHARS = 8
_INT64 = range(-(2**63), 2**64)  # orjson writes int64 and uint64


def dumps(value: Any) -> str:
    """Compact, UTF-8 (no \\u escapes but the required ones), keys in insertion order."""
    return encoded(value).decode("utf-8")


def encoded(value: Any) -> bytes:
    """The value's JSON text as UTF-8, in one orjson call or, when large, in pieces."""
    if _fits_one_call(value):
        try:
            return orjson.dumps(value)
        except orjson.JSONEncodeError:
            if not isinstance(value, (dict, list, tuple)):
                raise
    return b"".join(_pieces(value))


def _pieces(value: Any) -> Iterator[bytes]:
    if isinstance(value, str):
        yield from _string_pieces(value)
    elif isinstance(value, int) and not isinstance(value, bool) and value not in _INT64:
        yield str(value).encode("ascii")
    elif isinstance(value, dict):
        yield from _whole_or(value, _object_pieces)
    elif isinstance(value, (list, tuple)):
        yield from _whole_or(value, _array_pieces)
    else:
        yield orjson.dumps(value)


def _whole_or(value: Any, apart: Any) -> Iterator[bytes]:
    if _fits_one_call(value):
        try:
            yield orjson.dumps(value)
            return
        except orjson.JSONEncodeError:
            pass  # an integer past 64 bits somewhere inside: taken apart
    yield from apart(value)


def _string_pieces(text: str) -> Iterator[bytes]:
    if len(text) <= PIECE_CHARS:
        yield orjson.dumps(text)
        return
    # Escaping is per character, so slices escaped apart join to the escaped whole.
    yield b'"'
    for start in range(0, len(text), PIECE_CHARS):
        yield orjson.dumps(text[start : start + PIECE_CHARS])[1:-1]
    yield b'"'


def _object_pieces(members: dict[str, Any]) -> Iterator[bytes]:
    yield b"{"
    for index, (key, member) in enumerate(members.items()):
        yield (b"," if index else b"") + orjson.dumps(key) + b":"
        yield from _pieces(member)
    yield b"}"


def _array_pieces(elements: list[Any] | tuple[Any, ...]) -> Iterator[bytes]:
    yield b"["
    for index, element in enumerate(elements):
        if index:
            yield b","
        yield from _pieces(element)
    yield b"]"


def _fits_one_call(value: Any) -> bool:
    """Whether `value` is a scalar, or a container of about PIECE_CHARS at most.

    Sizing stops as soon as the budget is spent, so a large value costs a look at its first
    PIECE_CHARS characters only.
    """
    if not isinstance(value, (dict, list, tuple)):
        return True
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
