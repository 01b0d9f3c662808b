"""A body rendered after a kept prefix, written as JSON in parts: the prefix's messages written once.

An agent loop's rounds render the same prefix (providers/prefix.py) followed by the
turn's own messages, and the prefix's messages are most of the body's bytes. They
are never mutated (conversation.RenderedPrefix), and a value's JSON does not depend
on where it stands in a body (one encoder, no indentation: common.encoded_body). So
the body's JSON is that of the body with one marker string standing for the prefix's
run of messages, split at the marker, with the run's JSON (without its brackets) in
between. The run's JSON is kept with the prefix, in parts: a prefix extended after a
completed turn (the same objects followed by the turn's) is the kept parts of the one
before and the turn's. The parts are joined once, where the answer is written
(server/servicers/turn.py), not copied into a body of their own each round.

The marker is drawn at random once per process; where the marked body's JSON holds it
more than once (a message quoting it) the body is written whole, as it is where the
body does not hold the prefix's messages as one run of a top-level list (a provider
that merged the boundary's messages).
"""

from __future__ import annotations

import secrets
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, cast

from pioneer_grpc.providers.common import JSON, encoded_body
from pioneer_grpc.providers.conversation import RenderedPrefix


def _written(value: Any, source_bytes: int) -> bytes:
    """Any JSON value written as `encoded_body` writes a body (it takes any value alike)."""
    return encoded_body(cast(JSON, value), source_bytes=source_bytes)


_MARKER = "pioneer-prefix-" + secrets.token_hex(16)
_MARKER_JSON = _written(_MARKER, 0)

# Bound on the kept JSON (the load cache holds the prefixes themselves: 64 MiB at most).
MAX_KEPT_BYTES = 32 * 1024 * 1024
# A prefix extended turn after turn is joined into one part past this many.
MAX_PARTS = 32


Parts = tuple[bytes, ...]


def _size(parts: Parts) -> int:
    return sum(map(len, parts))


class _Kept:
    """The JSON of prefixes' messages by prefix (held weakly: a prefix gone is never matched),
    least recently used first, bounded by bytes."""

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._items: OrderedDict[int, tuple[weakref.ref[RenderedPrefix], Parts]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, prefix: RenderedPrefix) -> Parts | None:
        with self._lock:
            found = self._items.get(id(prefix))
            if found is None or found[0]() is not prefix:
                return None
            self._items.move_to_end(id(prefix))
            return found[1]

    def longest_base(self, rendered: Sequence[Any]) -> tuple[int, Parts] | None:
        """(how many, JSON) of the longest kept prefix whose messages open `rendered`, the same objects."""
        with self._lock:
            kept = [(ref(), text) for ref, text in self._items.values()]
        best: tuple[int, Parts] | None = None
        for base, text in kept:
            if base is None:
                continue
            count = len(base.rendered)
            if count > len(rendered) or (best is not None and count <= best[0]):
                continue
            if _same_objects(base.rendered, rendered[:count]):
                best = (count, text)
        return best

    def put(self, prefix: RenderedPrefix, parts: Parts) -> None:
        size = _size(parts)
        if size > self._max_bytes // 4:
            return
        with self._lock:
            for key in [key for key, (ref, _) in self._items.items() if ref() is None]:
                self._bytes -= _size(self._items.pop(key)[1])
            old = self._items.pop(id(prefix), None)
            if old is not None:
                self._bytes -= _size(old[1])
            self._items[id(prefix)] = (weakref.ref(prefix), parts)
            self._bytes += size
            while self._bytes > self._max_bytes:
                self._bytes -= _size(self._items.popitem(last=False)[1][1])


_kept = _Kept(MAX_KEPT_BYTES)


def _same_objects(first: Sequence[Any], second: Sequence[Any]) -> bool:
    return len(first) == len(second) and all(a is b for a, b in zip(first, second, strict=True))


def _run_of(body: dict[str, JSON], rendered: Sequence[Any]) -> tuple[str, int] | None:
    """(key, start): the top-level list holding `rendered`'s objects as one run, and where."""
    for key, value in body.items():
        if not isinstance(value, list):
            continue
        for start, item in enumerate(value):
            if item is rendered[0]:
                return (key, start) if _same_objects(rendered, value[start : start + len(rendered)]) else None
    return None


def _prefix_parts(prefix: RenderedPrefix, source_bytes: int) -> Parts:
    """The JSON of the prefix's messages without the brackets, in parts: kept, or a kept base's
    parts followed by the rest."""
    found = _kept.get(prefix)
    if found is not None:
        return found
    rendered = prefix.rendered
    base = _kept.longest_base(rendered)
    if base is None:
        parts: Parts = (_written(list(rendered), source_bytes)[1:-1],)
    elif base[0] == len(rendered):
        parts = base[1]
    else:
        parts = (*base[1], b"," + _written(list(rendered[base[0] :]), source_bytes)[1:-1])
        if len(parts) > MAX_PARTS:
            parts = (b"".join(parts),)
    _kept.put(prefix, parts)
    return parts


def encoded_parts(body: dict[str, JSON], prefix: RenderedPrefix, *, source_bytes: int) -> Parts:
    """`encoded_body(body)` in parts to join, the prefix's messages written once (the module's doc)."""
    rendered = prefix.rendered
    found = _run_of(body, rendered) if rendered else None
    if found is None:
        return (encoded_body(body, source_bytes=source_bytes),)
    key, start = found
    messages = body[key]
    assert isinstance(messages, list)
    marked = dict(body)
    marked[key] = [*messages[:start], _MARKER, *messages[start + len(rendered) :]]
    head, found_marker, tail = encoded_body(marked, source_bytes=source_bytes).partition(_MARKER_JSON)
    if not found_marker or _MARKER_JSON in tail:
        return (encoded_body(body, source_bytes=source_bytes),)
    return (head, *_prefix_parts(prefix, source_bytes), tail)
