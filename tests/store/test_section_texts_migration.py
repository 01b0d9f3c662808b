"""Revision 0020 (after 0019) adds section_texts, a round's break entries and decision, and the thread list's
indexes to a database with rows, on SQLite and PostgreSQL: the rows stay, and read back with the new
columns at their defaults."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from pioneer_grpc.store import round_usage, section_texts
from tests.history.test_open_counts import MOMENT, _alembic
from tests.store.contract.test_round_usage import _usage
from tests.store.test_round_usage_migration import old_thread


async def test_the_upgrade_keeps_usage_and_takes_texts(empty_database_url):
    engine = create_async_engine(empty_database_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_alembic, "0018_thread_tenants")
            await old_thread(conn)
            await conn.run_sync(_old_record)
            await conn.run_sync(_alembic, "head")
            found = await conn.run_sync(round_usage.timeline, "default", "t", 0, 10, False)
            await conn.run_sync(section_texts.keep_in, "default", "t", {"f" * 64: "## Soul\nterse"}, MOMENT)
            texts = await conn.run_sync(section_texts.texts_in, "default", "t", ["f" * 64, "e" * 64])
        [(number, usage)] = found[0]
        assert (number, usage.break_cause, usage.break_entry_ids, usage.break_entry_count) == (1, 3, (), 0)
        assert usage.history_decision == 0 and found[1:] == (1, 1)
        assert texts == {"f" * 64: "## Soul\nterse"}
    finally:
        await engine.dispose()


def _old_record(conn) -> None:
    """A round as revision 0017 stored it: no break entries, no decision."""
    usage = _usage()
    conn.execute(
        text(
            "INSERT INTO round_usage (thread_id, turn_id, manifest_event_id, turn_message_count, provider, "
            "model, input_tokens, output_tokens, break_cause, break_detail, break_tokens_invalidated, "
            "break_tokens_kept, reported_at) "
            "VALUES (:t, :u, 1, 1, 3, :m, 12000, 300, 3, 'e7', 1500, 7000, :now)"
        ),
        {"t": usage.thread_id, "u": usage.turn_id, "m": usage.model, "now": MOMENT},
    )
