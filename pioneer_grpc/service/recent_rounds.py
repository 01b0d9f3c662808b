"""Each thread's last round this server prepared, as much as a loop's report of its usage needs.

Kept with the same retry rule as the prefix breaks (service/prefix_breaks.py): a PrepareTurn sent
again is the same round. The body is the rendered JSON (a reference: rendered JSON is never
written in place); the round's body before it rides along, so each thread holds at most two, and
all threads together at most MAX_KEPT_BODIES_BYTES (least recently used threads out first).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

from pioneer_grpc.service.tenancy import ThreadKey
from pioneer_grpc.v1 import history_pb2

MAX_THREADS = 1024
# Bodies above this are not kept for the expected side (a round at its caps is megabytes).
MAX_KEPT_BODY_SOURCE_BYTES = 4 * 1024 * 1024
# The bodies kept in all (by the encoded size of what each was rendered from): past it, the least
# recently used threads go first.
MAX_KEPT_BODIES_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class SeenRound:
    """A round this server prepared, as much as its usage needs."""

    turn_id: str
    turn_message_count: int
    manifest_event_id: int
    provider: int
    model: str
    prefix_break: history_pb2.PrefixBreak | None
    body: dict[str, Any] | None
    # The encoded size of what `body` was rendered from (0 without a body).
    body_bytes: int = 0
    # The body of the thread's round before this one (None: not known, or none), and its size.
    body_before: dict[str, Any] | None = None
    body_before_bytes: int = 0

    @property
    def kept_bytes(self) -> int:
        return self.body_bytes + self.body_before_bytes


class RecentRounds:
    """Each thread's last round (with the one before it), least recently used thread first out."""

    def __init__(self, size: int = MAX_THREADS, max_bytes: int = MAX_KEPT_BODIES_BYTES) -> None:
        self._size = size
        self._max_bytes = max_bytes
        self._bytes = 0
        self._items: OrderedDict[ThreadKey, tuple[SeenRound, SeenRound | None]] = OrderedDict()

    @property
    def kept_bytes(self) -> int:
        return self._bytes

    def forget(self, thread: ThreadKey, turn_id: str | None = None) -> None:
        """Drops what is kept of the thread (deleted), or only when its last round was `turn_id`'s
        (abandoned): a thread or turn made again under the same id has had no round yet."""
        found = self._items.get(thread)
        if found is not None and turn_id in (None, found[0].turn_id):
            del self._items[thread]
            self._bytes -= found[0].kept_bytes

    def last(self, thread: ThreadKey) -> SeenRound | None:
        found = self._items.get(thread)
        return None if found is None else found[0]

    def swap(self, thread: ThreadKey, current: SeenRound) -> SeenRound | None:
        """Keeps `current` as the thread's last round; the round before it (None: not known)."""
        found = self._items.pop(thread, None)
        if found is not None:
            self._bytes -= found[0].kept_bytes
        key = (current.turn_id, current.turn_message_count)
        if found is None:
            previous = None
        elif (found[0].turn_id, found[0].turn_message_count) == key:
            previous = found[1]  # the same round again
        else:
            previous = found[0]
        if previous is not None and previous.body is not None and current.body is not None:
            current = replace(current, body_before=previous.body, body_before_bytes=previous.body_bytes)
        # The round before keeps its own body (the one this round's usage may still ask about), not
        # the body before it: each thread holds at most two.
        kept_previous = None if previous is None else replace(previous, body_before=None, body_before_bytes=0)
        self._items[thread] = (current, kept_previous)
        self._bytes += current.kept_bytes
        while self._items and (len(self._items) > self._size or self._bytes > self._max_bytes):
            _, (oldest, _) = self._items.popitem(last=False)
            self._bytes -= oldest.kept_bytes
        return previous
