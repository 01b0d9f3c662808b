"""Revision 0016 adds round_usage to a database with rows, on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from pioneer_grpc.store import round_usage
from tests.history.test_open_counts import MOMENT, _alembic
from tests.store.contract.test_round_usage import _usage


async def old_thread(conn: AsyncConnection) -> None:
    """Thread "t" (model gpt-5) as every revision since 0014 holds it."""
    await conn.execute(
        text(
            "INSERT INTO threads (thread_id, max_context_tokens, response_reserve_tokens, model, "
            "summary_model, created_at, updated_at, compaction_strategy) "
            "VALUES ('t', 1000, 100, 'gpt-5', '', :now, :now, 0)"
        ),
        {"now": MOMENT},
    )


async def test_the_upgrade_keeps_threads_and_kept_rounds_and_takes_usage(empty_database_url):
    engine = create_async_engine(empty_database_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_alembic, "0014_compaction_marks")
            await old_thread(conn)
            await conn.execute(
                text(
                    "INSERT INTO rendered_rounds (thread_id, turn_id, round, manifest_event_id, created_at, "
                    "kept_bytes, round_pb) VALUES ('t', 'u1', 1, 4, :now, 3, :pb)"
                ),
                {"now": MOMENT, "pb": b"abc"},
            )
            await conn.run_sync(_alembic, "head")
            await conn.run_sync(round_usage.record, "default", _usage())
            threads = (await conn.execute(text("SELECT thread_id, model FROM threads"))).all()
            kept = (await conn.execute(text("SELECT turn_id, round_pb FROM rendered_rounds"))).all()
            found = await conn.run_sync(round_usage.thread_rounds, "default", "t", 5)
        assert [tuple(r) for r in threads] == [("t", "gpt-5")]
        assert [(r[0], bytes(r[1])) for r in kept] == [("u1", b"abc")]
        assert [(r.input_tokens, r.cache_read_input_tokens, r.break_cause) for r in found] == [
            (12_000, 9_000, 3)
        ]
    finally:
        await engine.dispose()
