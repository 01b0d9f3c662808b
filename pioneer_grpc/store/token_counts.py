"""Token counts of entries and summaries in tokenizers other than the one they were first counted in.

An entry is counted at append in its thread model's tokenizer (conversation_entries.
token_count and .tokenizer). When its thread moves to a model of another family, the
first load that budgets it in the new tokenizer counts it and stores the count here;
later loads read it. Inserts are ON CONFLICT DO NOTHING: two loads that count the
same entry at once store one row, and both counts are equal anyway.

Each runs in the caller's unit of work (store/runner.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from pioneer_grpc.store.models import EntryCountRow, SummaryCountRow
from pioneer_grpc.store.turns import insert


def _entry_query(tokenizer: str, sequences: Iterable[int]) -> Any:
    return select(EntryCountRow.entry_sequence, EntryCountRow.token_count).where(
        EntryCountRow.tokenizer == tokenizer, EntryCountRow.entry_sequence.in_(list(sequences))
    )


def _summary_query(tokenizer: str, summary_id: int) -> Any:
    return select(SummaryCountRow.token_count).where(
        SummaryCountRow.tokenizer == tokenizer, SummaryCountRow.summary_id == summary_id
    )


def _entry_insert(conn: Connection, tokenizer: str, counts: dict[int, int]) -> Any:
    rows = [{"entry_sequence": seq, "tokenizer": tokenizer, "token_count": n} for seq, n in counts.items()]
    return insert(conn, EntryCountRow).values(rows).on_conflict_do_nothing()


def _summary_insert(conn: Connection, tokenizer: str, summary_id: int, count: int) -> Any:
    return (
        insert(conn, SummaryCountRow)
        .values(summary_id=summary_id, tokenizer=tokenizer, token_count=count)
        .on_conflict_do_nothing()
    )


def entry_counts_in(conn: Connection, tokenizer: str, sequences: Iterable[int]) -> dict[int, int]:
    return {row.entry_sequence: row.token_count for row in conn.execute(_entry_query(tokenizer, sequences))}


def summary_count_in(conn: Connection, tokenizer: str, summary_id: int) -> int | None:
    found: int | None = conn.execute(_summary_query(tokenizer, summary_id)).scalar()
    return found


def store_in(
    conn: Connection, tokenizer: str, entry_counts: dict[int, int], summary: tuple[int, int] | None
) -> None:
    """Entry counts by sequence, and a summary's (id, count), in the caller's transaction."""
    if entry_counts:
        conn.execute(_entry_insert(conn, tokenizer, entry_counts))
    if summary is not None:
        conn.execute(_summary_insert(conn, tokenizer, *summary))
