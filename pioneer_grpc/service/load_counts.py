"""A load's counts in its thread model's tokenizer: stored ones, else counted once and stored.

An entry carries the count made at append, in the tokenizer of its thread's model
then. A load budgets in the tokenizer of the thread's model now; when they differ
(the thread moved to a model of another family), the count in the load's tokenizer
comes from store/token_counts.py, or, the first time, is counted here and stored
there, so each entry is recounted once per tokenizer, lazily, and a move back to the
first family reads the append counts again. The summary the load uses is treated
the same way.

`fill_in` fills the entries' token_count in place and returns the summary's count,
inside the caller's unit of work (store/runner.py: counting in the store's thread on
SQLite), which stores what it counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Connection

from pioneer_grpc.history import tokens
from pioneer_grpc.history.render import entry_counted_texts, summary_text
from pioneer_grpc.store import token_counts
from pioneer_grpc.v1 import history_pb2


@dataclass
class _Stale:
    """What a load read that is not counted in its tokenizer."""

    tokenizer: str
    entries: list[history_pb2.ConversationEntry]
    # (summary id, text) when the summary's count is in another tokenizer.
    summary: tuple[int, str] | None
    summary_count: int | None = None
    # What count_missing counted: entries by sequence, and the summary's (id, count).
    counted: dict[int, int] = field(default_factory=dict)
    counted_summary: tuple[int, int] | None = None

    def apply(self, stored: dict[int, int]) -> None:
        for entry in self.entries:
            if entry.sequence in stored:
                entry.token_count = stored[entry.sequence]
                entry.tokenizer = self.tokenizer

    @property
    def missing(self) -> list[history_pb2.ConversationEntry]:
        return [e for e in self.entries if e.tokenizer != self.tokenizer]

    @property
    def needs_counting(self) -> bool:
        return bool(self.missing) or (self.summary is not None and self.summary_count is None)

    def count_missing(self) -> None:
        """Counts what is still missing (blocking) and applies it; `counted*` say what to store."""
        missing = self.missing
        self.counted = {
            e.sequence: sum(tokens.count_blocking(entry_counted_texts(e), self.tokenizer)) for e in missing
        }
        self.apply(self.counted)
        if self.summary is not None and self.summary_count is None:
            [self.summary_count] = tokens.count_blocking([summary_text(self.summary[1])], self.tokenizer)
            self.counted_summary = (self.summary[0], self.summary_count)


def _stale(tokenizer: str, entries: Sequence[history_pb2.ConversationEntry], summary: Any) -> _Stale | None:
    found = [e for e in entries if e.tokenizer != tokenizer]
    summary_stale = summary is not None and summary.tokenizer != tokenizer
    if not found and not summary_stale:
        return None
    return _Stale(tokenizer, found, (summary.id, summary.text) if summary_stale else None)


def _summary_tokens(summary: Any, stale: _Stale | None) -> int | None:
    if summary is None:
        return None
    if stale is None or stale.summary_count is None:
        return int(summary.token_count)
    return stale.summary_count


def fill_in(
    conn: Connection, tokenizer: str, entries: Sequence[history_pb2.ConversationEntry], summary: Any
) -> int | None:
    """In the caller's (write) transaction: counts in `tokenizer`, read or counted and stored."""
    stale = _stale(tokenizer, entries, summary)
    if stale is not None:
        stale.apply(token_counts.entry_counts_in(conn, tokenizer, (e.sequence for e in stale.entries)))
        if stale.summary is not None:
            stale.summary_count = token_counts.summary_count_in(conn, tokenizer, stale.summary[0])
        if stale.needs_counting:
            stale.count_missing()
            token_counts.store_in(conn, tokenizer, stale.counted, stale.counted_summary)
    return _summary_tokens(summary, stale)
