"""Remembered: a thread-safe map from bytes to what was worked out from them, bounded by the keys' bytes.

The least recently used key goes first; a key over an eighth of the bound is not
kept. For work that depends on nothing but its input's bytes (a check, a
printout), done again whenever the input is not remembered.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

V = TypeVar("V")


class Remembered(Generic[V]):
    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._items: OrderedDict[bytes, V] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: bytes) -> V | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: bytes, value: V) -> None:
        if len(key) > self._max_bytes // 8:
            return
        with self._lock:
            if key in self._items:
                return
            self._items[key] = value
            self._bytes += len(key)
            while self._bytes > self._max_bytes:
                old, _ = self._items.popitem(last=False)
                self._bytes -= len(old)
