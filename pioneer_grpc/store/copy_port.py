"""The store port's copies of a thread: ForkThread, ExportThread and ImportThread ask this of it.

A `ThreadCopy` is a thread as its rows hold it, without what is local to one database
(entry sequences, summary ids) or to one server (manifests, their events, kept rendered
rounds, round usage): its config, its turns, its entries with their parts, content hashes
and token counts (in every tokenizer the store counted them in), and its summaries, which
name the entry they cover through by id. Written anywhere, it loads and renders as the
thread it was read from: the entries keep their order, counts and creation times, so a load
budgets, clears and summarizes them as it did.

    copy = await store.copies.read("t-1")                 # the whole thread, one snapshot
    thread = await store.copies.write("t-2", copy)         # one transaction: all of it or none
    forked = await store.copies.fork(Fork("t-1", "turn-4", "t-3", config, expected))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from pioneer_grpc.store.port import Conflict
from pioneer_grpc.v1 import history_pb2


@dataclass(frozen=True)
class CopiedTurn:
    turn_id: str
    status: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class CopiedEntry:
    """An entry as stored: `entry` with its output fields (token_count and tokenizer as appended,
    completed, create_time; its sequence is the source's and is drawn again when written), its
    content hash, and its counts in other tokenizers."""

    entry: history_pb2.ConversationEntry
    content_hash: str
    counts: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class CopiedSummary:
    """A summary as stored; `summary.covers_through_entry_id` names the entry it covers through
    (its sequence is the source's). `tokenizer` is its count's, "" when not recorded."""

    summary: history_pb2.ThreadSummary
    tokenizer: str
    counts: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ThreadCopy:
    config: history_pb2.ThreadConfig
    created_at: datetime
    updated_at: datetime
    # The entry a failed compaction covered through ("" none): not retried until the history grows.
    compaction_failed_entry_id: str
    turns: Sequence[CopiedTurn]
    # By sequence, oldest first.
    entries: Sequence[CopiedEntry]
    # Oldest first: the last is the one in use.
    summaries: Sequence[CopiedSummary]


@dataclass(frozen=True)
class Written:
    """A copy as stored: the thread, and how many turns and summaries it holds."""

    thread: history_pb2.Thread
    turn_count: int
    summary_count: int


@dataclass(frozen=True)
class Fork:
    """ForkThread's copy: thread `source_thread_id` up to and including its completed turn `turn_id`,
    written as `thread_id` with `config`, when the source's config is still `expected`."""

    source_thread_id: str
    turn_id: str
    thread_id: str
    config: history_pb2.ThreadConfig
    expected: history_pb2.ThreadConfig


class Copies(Protocol):
    async def read(self, thread_id: str, through_turn_id: str = "") -> ThreadCopy:
        """The whole thread as one snapshot; NotFound for an unknown thread. With `through_turn_id`,
        the part of it `fork` would copy at that turn (its errors as `fork`'s)."""
        ...

    async def write(self, thread_id: str, copy: ThreadCopy) -> Written:
        """Stores `copy` as thread `thread_id` in one transaction (all of it or none), its creation and
        update times kept; ALREADY_EXISTS THREAD_EXISTS when the id is taken, writing nothing."""
        ...

    async def fork(self, fork: Fork) -> Written | Conflict:
        """In one transaction: reads the source's completed entries through the last entry of its
        completed turn (their turns, their counts, the summaries covering no later entry) and writes
        them as the new thread. NOT_FOUND THREAD_NOT_FOUND / TURN_NOT_FOUND, FAILED_PRECONDITION
        TURN_NOT_COMPLETED, ALREADY_EXISTS THREAD_EXISTS; Conflict, writing nothing, when the
        source's config is not `expected`. The source is only read."""
        ...
