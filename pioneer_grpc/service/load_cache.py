"""Answers of recent full-history loads, reused while the thread's history state is unchanged.

A load under the threshold is a pure function of what it reads; when the
HistoryState query (read in the caller's own transaction) says nothing changed,
the earlier answer is the answer. Only FULL decisions are kept (no summarizer,
no lock involved). Each answer is kept with its messages already encoded, so an
RPC copies bytes instead of building and encoding 200 messages again.

One answer per thread serves every excluded turn that had no part in it: a load
that leaves out turn X reads the same rows as one that leaves out nothing when
none of the rows read belongs to X (a turn in progress never has completed
entries, so a round's own turn never does). A turn that did take part gets an
answer of its own. Bounded LRU by answers and by bytes (each keeps its messages
twice, as objects and encoded: 256 histories of 200 long messages would
otherwise be kept whatever their size; a provider's rendering of them, kept
with the answer, counts as their encoded size again), one per ServiceContext;
thread-safe (rounds on SQLite run in the store's own thread, see store/runner.py).
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from pioneer_grpc.history.decide import LoadResult, Snapshot
from pioneer_grpc.providers.conversation import RenderedPrefix
from pioneer_grpc.service.tenancy import ThreadKey
from pioneer_grpc.store.port import HistoryState
from pioneer_grpc.v1 import chat_pb2, history_pb2
from pioneer_grpc.wire import repeated_records

MAX_THREADS = 256
# Encoded bytes of the answers kept (their objects take about as much again). An agent loop's
# thread of ~100k tokens keeps ~1.5 MB (messages, the entries they were decided from, a rendered
# prefix); loops take their turns in rotation, so a bound below their working set makes every
# answer leave before its thread's next round (16 loops missed every time at 16 MiB).
MAX_BYTES = 64 * 1024 * 1024

# Parts an answer's framed records are kept in before they are joined into one: a part per turn
# completed since, each one copied again only when they are joined.
FRAMED_PARTS = 16

# (thread id, excluded turn id); "" for the answer that excludes nothing.
# (thread, the turn a load left out)
Key = tuple[ThreadKey, str]


@dataclass(frozen=True)
class Base:
    """An earlier answer's rendered prefix, and how this answer's messages differ from its: the
    messages `dropped` at `start` (the oldest turns, past the turn limit), its last messages
    `removed` (the turns from a tool result cleared since, sent anew), `added` at the end."""

    prefix: RenderedPrefix
    added: int
    start: int = 0
    dropped: tuple[chat_pb2.ChatMessage, ...] = ()
    removed: tuple[chat_pb2.ChatMessage, ...] = ()


# (provider, prefix, messages taken off it, the messages it keeps but its opening system ones, path)
Slide = Callable[
    [int, RenderedPrefix, Sequence[chat_pb2.ChatMessage], Sequence[chat_pb2.ChatMessage], str],
    RenderedPrefix | None,
]


@dataclass(frozen=True)
class CachedLoad:
    state: HistoryState
    # Shared between callers: never mutated, handed out as `copy()` where a caller may change it.
    result: LoadResult
    encoded_messages: tuple[bytes, ...]
    # The turns of the entries read, with how many entries each; None when unknown (then it
    # serves its own question only).
    turn_ids: Mapping[str, int] | None
    more_entries: bool
    # What it was decided from, when a load that reads more completed entries may extend it
    # (history_current.py): the answer is `decide.full` of it (of `cleared`, when given), nothing
    # repaired.
    snapshot: Snapshot | None = field(default=None, compare=False, repr=False)
    # With `snapshot`, when the answer is `decide.full` of it with old tool results cleared (the
    # history over the threshold, under it once cleared): that cleared snapshot.
    cleared: Snapshot | None = field(default=None, compare=False, repr=False)
    # With `snapshot`, when the answer is `decide.truncated` of it (the truncate strategy, over the
    # threshold) rather than `decide.full`.
    truncated: bool = field(default=False, compare=False, repr=False)
    # Bytes of `encoded_messages`.
    encoded_size: int = 0
    # framed_parts(n) by field number: a dict is thread-safe enough here (a race only frames twice).
    _framed: dict[int, tuple[bytes, ...]] = field(default_factory=dict, compare=False, repr=False)
    # rendered_prefix by (provider, path); None where the messages cannot be one.
    _prefixes: dict[tuple[int, str], RenderedPrefix | None] = field(
        default_factory=dict, compare=False, repr=False
    )
    # By (provider, path): the rendered prefix of an earlier answer whose messages this one's
    # begin with but for `Base.dropped`, and how many messages follow them here (a completed
    # turn's): that prefix without the dropped ones and extended with them is this answer's
    # rendered prefix (providers/prefix.py: slide_prefix, extend_prefix). Dropped once this
    # answer's own is built.
    _bases: dict[tuple[int, str], Base] = field(default_factory=dict, compare=False, repr=False)
    # Told this answer and the bytes a prefix adds, so the cache that keeps it counts them. It must
    # not hold the answer itself: a cycle would keep every replaced answer (its messages, framed
    # records and prefixes) until a full garbage collection.
    _grown: Callable[[CachedLoad, int], None] | None = field(default=None, compare=False, repr=False)

    @property
    def through(self) -> int:
        """With `snapshot`: the sequence after which completed entries extend it."""
        assert self.snapshot is not None
        if self.snapshot.newest is not None:
            return self.snapshot.newest[1]
        summary = self.snapshot.summary
        return summary.covers_through_sequence if summary is not None else 0

    def serves(self, exclude_turn_id: str) -> bool:
        """Whether this answer (read excluding nothing) is also the answer that leaves out the turn."""
        if not exclude_turn_id:
            return True
        return self.turn_ids is not None and exclude_turn_id not in self.turn_ids and not self.more_entries

    def framed_parts(self, field_number: int) -> tuple[bytes, ...]:
        """The messages as the records of a repeated message field `field_number`, framed once and
        kept: in parts to join, the records of an earlier answer's messages first, then those each
        completed turn added (at most FRAMED_PARTS), so that extending an answer copies no record."""
        found = self._framed.get(field_number)
        if found is None:
            found = self._framed[field_number] = (repeated_records(field_number, self.encoded_messages),)
        return found

    def framed(self, field_number: int) -> bytes:
        """`framed_parts` joined."""
        return b"".join(self.framed_parts(field_number))

    def rendered_prefix(
        self,
        provider: int,
        path: str,
        build: Callable[[int, Sequence[chat_pb2.ChatMessage], str], RenderedPrefix | None],
        extend: Callable[[int, RenderedPrefix, Sequence[chat_pb2.ChatMessage], str], RenderedPrefix | None]
        | None = None,
        slide: Slide | None = None,
        cut: Slide | None = None,
    ) -> RenderedPrefix | None:
        """The messages rendered for `provider` as the start of a round's conversation, built once.

        Kept with this answer, so it lives exactly as long as the history it renders
        is the thread's: a change to the history is a new answer. Where this answer
        extends an earlier one whose prefix was built, `extend` renders the new
        messages after that prefix, once `slide` took the messages this one left out
        off its front, or `cut` those it has anew off its end; where any cannot (None),
        `build` renders them all.
        Blocking.
        """
        key = (provider, path)
        if key not in self._prefixes:
            built = None
            base = self._bases.get(key)
            if base is not None and extend is not None:
                messages = self.result.messages
                end = len(messages) - base.added
                earlier: RenderedPrefix | None = base.prefix
                if base.dropped:
                    fits = slide is not None and base.start == len(base.prefix.leading_origins)
                    rest = messages[base.start : end]
                    earlier = (
                        slide(provider, base.prefix, base.dropped, rest, path) if slide and fits else None
                    )
                if base.removed:
                    start = len(base.prefix.leading_origins)
                    rest = messages[start:end]
                    earlier = cut(provider, base.prefix, base.removed, rest, path) if cut else None
                if earlier is not None:
                    built = extend(provider, earlier, messages[end:], path)
            if built is None:
                built = build(provider, self.result.messages, path)
            # Two rounds may build it at once: the first one kept is counted.
            kept = self._prefixes.setdefault(key, built) is built
            # A base was counted as a prefix is (`LoadCache.store`): the one built takes its place.
            grown = (self.encoded_size if built is not None else 0) - (self.encoded_size if base else 0)
            if kept and grown and self._grown is not None:
                self._grown(self, grown)
            self._bases.pop(key, None)
        return self._prefixes[key]

    def copy(self) -> LoadResult:
        report = history_pb2.HistoryDecisionReport()
        report.CopyFrom(self.result.report)
        return LoadResult(messages=list(self.result.messages), report=report, kept=self.result.kept)


def _turns_read(
    snapshot: Snapshot,
    extends: CachedLoad | None,
    count: int,
    entries: Sequence[history_pb2.ConversationEntry],
) -> dict[str, int] | None:
    """`CachedLoad.turn_ids` of an answer read as `snapshot`: of `extends`, without its first
    `count` entries and with `entries` added, where it extends one."""
    if snapshot.repairs:
        return None  # a repaired read may have dropped entries: which turns it read is not known
    if extends is None or extends.turn_ids is None or (count and extends.snapshot is None):
        return dict(Counter(entry.turn_id for entry in snapshot.entries))
    turns = dict(extends.turn_ids)
    for entry in extends.snapshot.entries[:count] if count and extends.snapshot else ():
        left = turns[entry.turn_id] - 1
        if left:
            turns[entry.turn_id] = left
        else:
            del turns[entry.turn_id]
    for entry in entries:
        turns[entry.turn_id] = turns.get(entry.turn_id, 0) + 1
    return turns


def _bases_after(extends: CachedLoad, start: int, count: int, added: int) -> dict[tuple[int, str], Base]:
    """The earlier answer's prefixes (or what it had to build them from), for an answer that leaves
    out `count` of its messages at `start` and adds `added`: its messages, once those left out are
    off their front, are followed by those added. Each counts as a prefix of the answer does."""
    gone = tuple(extends.result.messages[start : start + count])
    bases: dict[tuple[int, str], Base] = {}
    for key, base in dict(extends._bases).items():
        if not count:
            bases[key] = replace(base, added=base.added + added)
        # What is left out now was in the earlier prefix, where it left out before.
        elif (
            not base.removed
            and (not base.dropped or base.start == start)
            and start + count <= len(extends.result.messages) - base.added
        ):
            bases[key] = Base(base.prefix, base.added + added, start, (*base.dropped, *gone))
    for key, prefix in dict(extends._prefixes).items():
        if prefix is not None:
            bases[key] = Base(prefix, added, start, gone)
    return bases


def _bases_cut(extends: CachedLoad, replaced: int, size: int) -> dict[tuple[int, str], Base]:
    """The earlier answer's prefixes for an answer of `size` messages that has its last `replaced`
    messages anew: each without its messages from the turn of the first one replaced on (a user
    message starts it), followed by this answer's from there."""
    old = extends.result.messages
    start = len(old) - replaced
    while start >= 0 and (start == len(old) or old[start].role != chat_pb2.CHAT_ROLE_USER):
        start -= 1
    if start < 0:
        return {}
    removed = tuple(old[start:])
    return {
        key: Base(prefix, size - start, removed=removed)
        for key, prefix in dict(extends._prefixes).items()
        if prefix is not None
    }


class LoadCache:
    def __init__(self, size: int = MAX_THREADS, max_bytes: int = MAX_BYTES) -> None:
        self._size = size
        self._max_bytes = max_bytes
        self._items: OrderedDict[Key, CachedLoad] = OrderedDict()
        self._sizes: dict[Key, int] = {}
        self.size_bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def model_of(self, thread: ThreadKey) -> str | None:
        """The thread's model as the kept answer that excludes nothing read it (None without one)."""
        with self._lock:
            found = self._items.get((thread, ""))
        return None if found is None else found.state.model

    def extendable(self, thread: ThreadKey) -> CachedLoad | None:
        """The thread's kept answer that excludes nothing, when later completed entries may extend it."""
        with self._lock:
            found = self._items.get((thread, ""))
        return found if found is not None and found.snapshot is not None else None

    def states(self, thread: ThreadKey, exclude_turn_id: str) -> tuple[HistoryState, ...]:
        """The states of the answers `find` may give for the thread leaving out the turn: a read that
        finds one of them needs nothing more from the store (store/port.py HistoryAsk.known)."""
        with self._lock:
            found = (self._items.get((thread, "")), self._items.get((thread, exclude_turn_id)))
        return tuple(dict.fromkeys(answer.state for answer in found if answer is not None))

    def find(self, thread: ThreadKey, exclude_turn_id: str, state: HistoryState) -> CachedLoad | None:
        with self._lock:
            for key in ((thread, ""), (thread, exclude_turn_id)):
                found = self._items.get(key)
                if found is not None and found.state == state and (key[1] or found.serves(exclude_turn_id)):
                    self._items.move_to_end(key)
                    return found
        return None

    def store(
        self,
        thread: ThreadKey,
        exclude_turn_id: str,
        state: HistoryState,
        snapshot: Snapshot,
        result: LoadResult,
        *,
        extendable: bool = False,
        extends: CachedLoad | None = None,
        dropped: tuple[int, int] = (0, 0),
        replaced: int = 0,
        cleared: Snapshot | None = None,
        truncated: bool = False,
        read_dropped: int | None = None,
    ) -> CachedLoad:
        """Keeps the answer. `extendable`: `result` is `decide.full(snapshot)` (of `cleared`, the
        snapshot with old tool results cleared, when given), kept with its snapshot so that later
        completed entries extend it. `extends`: the kept answer whose messages (and their encoding)
        `result`'s begin with, but for `dropped` (start, count): messages of `extends` left out, one
        per entry (the oldest turns, when newer ones pass the turn limit); and for its last
        `replaced` messages, which `result` has anew (results cleared since). `truncated`: `result`
        is `decide.truncated(snapshot)` instead. `read_dropped`: the entries of `extends`' snapshot
        left out of `snapshot`, where they are not the messages left out (a truncated answer)."""
        key = (thread, exclude_turn_id)
        extendable = extendable and not (snapshot.repairs or snapshot.cleared)
        start, count = dropped
        gone = count if read_dropped is None else read_dropped
        old = extends.encoded_messages if extends is not None else ()
        encoded = old[:start] + old[start + count : len(old) - replaced]
        new = tuple(message.SerializeToString() for message in result.messages[len(encoded) :])
        encoded += new
        # An extension reads (and adds) only the entries after those `extends` read.
        entries = (
            snapshot.entries[len(extends.snapshot.entries) - gone :] if extends and extends.snapshot else ()
        )
        cached = CachedLoad(
            state=state,
            result=result,
            encoded_messages=encoded,
            turn_ids=_turns_read(snapshot, extends, gone, entries),
            more_entries=snapshot.more_entries,
            snapshot=snapshot if extendable else None,
            cleared=cleared if extendable else None,
            truncated=truncated and extendable,
            encoded_size=(
                extends.encoded_size
                - sum(map(len, old[start : start + count]))
                - sum(map(len, old[len(old) - replaced :]))
                + sum(map(len, new))
                if extends is not None
                else sum(map(len, encoded))
            ),
            _grown=partial(self._grow, key),
        )
        if extends is not None and not replaced:
            cached._bases.update(_bases_after(extends, start, count, len(new)))
        elif extends is not None and not count:
            cached._bases.update(_bases_cut(extends, replaced, len(result.messages)))
        if extends is not None:
            # The records framed already stay, but for those left out, the start of the new ones.
            for number, parts in list(extends._framed.items()):
                if count:
                    head = len(repeated_records(number, old[:start]))
                    cut = head + len(repeated_records(number, old[start : start + count]))
                    if cut <= len(parts[0]):  # the oldest records only: the later parts stay as they are
                        parts = (parts[0][:head] + parts[0][cut:], *parts[1:])
                    else:
                        framed = b"".join(parts)
                        parts = (framed[:head] + framed[cut:],)
                if replaced:
                    framed = b"".join(parts)
                    parts = (
                        framed[: len(framed) - len(repeated_records(number, old[len(old) - replaced :]))],
                    )
                parts = (*parts, repeated_records(number, new))
                cached._framed[number] = parts if len(parts) <= FRAMED_PARTS else (b"".join(parts),)
        size = cached.encoded_size + result.report.ByteSize()
        if cached.snapshot is not None:
            size *= 2  # the entries it was decided from, about the size of their messages
        size += len(cached._bases) * cached.encoded_size
        if size > self._max_bytes:
            return cached
        with self._lock:
            self.size_bytes += size - self._sizes.get(key, 0)
            self._items[key], self._sizes[key] = cached, size
            self._items.move_to_end(key)
            self._evict()
        return cached

    def _grow(self, key: Key, cached: CachedLoad, size: int) -> None:
        with self._lock:
            if self._items.get(key) is not cached:
                return  # no longer kept: nothing to count
            self._sizes[key] += size
            self.size_bytes += size
            self._evict()

    def _evict(self) -> None:
        """Drops the least recently used answers while over a bound. Under the lock."""
        while len(self._items) > self._size or self.size_bytes > self._max_bytes:
            old, _ = self._items.popitem(last=False)
            self.size_bytes -= self._sizes.pop(old)

    def forget(self, thread: ThreadKey) -> None:
        """Drops every answer of the thread (it was deleted here)."""
        with self._lock:
            for key in [key for key in self._items if key[0] == thread]:
                del self._items[key]
                self.size_bytes -= self._sizes.pop(key)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._sizes.clear()
            self.size_bytes = 0
