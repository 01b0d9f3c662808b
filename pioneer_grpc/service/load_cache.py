"""Answers of recent full-history loads, reused while the thread's history state is unchanged.

A load under the threshold is a pure function of what it reads; when the
HistoryState query says nothing changed, the earlier answer is the answer. Only
FULL decisions are kept (no summarizer, no lock involved). Bounded LRU, one per ServiceContext.
"""

from __future__ import annotations

from collections import OrderedDict

from pioneer_grpc.history.decide import LoadResult
from pioneer_grpc.store.history_state import HistoryState
from pioneer_grpc.v1 import history_pb2

MAX_THREADS = 256

# (thread id, excluded turn id).
Key = tuple[str, str]


class LoadCache:
    def __init__(self, size: int = MAX_THREADS) -> None:
        self._size = size
        self._items: OrderedDict[Key, tuple[HistoryState, LoadResult]] = OrderedDict()

    def get(self, key: Key, state: HistoryState) -> LoadResult | None:
        found = self._items.get(key)
        if found is None or found[0] != state:
            return None
        self._items.move_to_end(key)
        cached = found[1]
        report = history_pb2.HistoryDecisionReport()
        report.CopyFrom(cached.report)
        return LoadResult(messages=list(cached.messages), report=report, kept=cached.kept)

    def put(self, key: Key, state: HistoryState, result: LoadResult) -> None:
        self._items[key] = (state, result)
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()
