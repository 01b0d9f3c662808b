"""A round's PrefixBreak: the previous round of each thread this server prepared, kept to compare with.

The comparison is the pure core's (history/prefix_break.py); this keeps, per thread, what made the
last round's body (a few references: the history's encoded messages are the kept history's own),
so a round's report can say whether its body reuses the previous round's prefix and, where not, why
and at what cost. Per process and bounded: after a restart, on another replica or worker, or once
the thread fell out of the bound, the round after reports nothing (the first round of a thread never
does). Item 5 of issue 40 stores a round's PrefixBreak with its usage; this is where it comes from.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence

from pioneer_grpc.history.decide import LoadResult
from pioneer_grpc.history.prefix_break import RoundPrefix, prefix_break, sections_before
from pioneer_grpc.history.tokens import MESSAGE_OVERHEAD
from pioneer_grpc.service.load_cache import CachedLoad
from pioneer_grpc.service.tenancy import ThreadKey
from pioneer_grpc.v1 import chat_pb2, history_pb2, turn_service_pb2

MAX_THREADS = 1024


# A round of a thread: its turn and how many of the turn's own messages it sends. A PrepareTurn sent
# again (its entries are idempotent) is the same round, compared with the round before it again.
RoundKey = tuple[str, int]


class RoundPrefixes:
    """Each thread's last round (with the one before it), least recently used thread first out."""

    def __init__(self, size: int = MAX_THREADS) -> None:
        self._size = size
        self._items: OrderedDict[ThreadKey, tuple[RoundKey, RoundPrefix, RoundPrefix | None]] = OrderedDict()

    def forget(self, thread: ThreadKey) -> None:
        self._items.pop(thread, None)

    def before(self, thread: ThreadKey, key: RoundKey) -> RoundPrefix | None:
        """The thread's round before round `key` (None: not known), keeping nothing."""
        found = self._items.get(thread)
        if found is None:
            return None
        return found[2] if found[0] == key else found[1]  # the same round again: the one before it

    def swap(self, thread: ThreadKey, key: RoundKey, current: RoundPrefix) -> RoundPrefix | None:
        """Keeps `current` as the thread's last round; the round before it (None: not known)."""
        previous = self.before(thread, key)
        self._items.pop(thread, None)
        self._items[thread] = (key, current, previous)
        while len(self._items) > self._size:
            self._items.popitem(last=False)
        return previous


def round_prefix(
    request: turn_service_pb2.PrepareTurnRequest,
    head: chat_pb2.ChatRequest,
    model: str,
    dynamic_before: bool,
    history: CachedLoad | LoadResult,
    report: history_pb2.HistoryDecisionReport,
) -> RoundPrefix:
    if isinstance(history, CachedLoad):
        encoded: Sequence[bytes] = history.encoded_messages
        result = history.result
    else:
        encoded = tuple(message.SerializeToString() for message in history.messages)
        result = history

    def messages() -> list[tuple[str, int]]:
        kept = [(entry.entry_id, entry.token_count + MESSAGE_OVERHEAD) for entry in result.kept]
        if len(result.messages) == len(kept) + 1:  # the summary first
            return [("", max(0, result.report.tokens_after - sum(t for _, t in kept))), *kept]
        return kept

    tools = hashlib.blake2b(
        b"".join(tool.SerializeToString(deterministic=True) for tool in request.tools), digest_size=16
    ).digest()
    return RoundPrefix(
        model=model,
        rendering=(request.provider, dynamic_before),
        tools=tools,
        sections=sections_before(head.compiled_prompt.manifest, dynamic_before),
        history=encoded,
        messages=messages,
        report=report,
    )


def observed(
    prefixes: RoundPrefixes, thread: ThreadKey, key: RoundKey, current: RoundPrefix
) -> history_pb2.PrefixBreak | None:
    """The round's PrefixBreak against the thread's previous round here (None: none, or not known),
    keeping nothing: a round goes on the timeline with its break in its commit, so the break is
    known before it, and the round is kept (`RoundPrefixes.swap`) only once committed; a round
    whose commit met a Conflict runs again, and is compared with the same round before it."""
    previous = prefixes.before(thread, key)
    return None if previous is None else prefix_break(previous, current)
