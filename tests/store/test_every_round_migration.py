"""Revision 0022 (after 0021) makes a round's usage optional and its key unique, on SQLite and
PostgreSQL: the reported rows stay (a duplicate of a round, the older, goes), read back with no
commit time; the downgrade drops the rows without usage and keeps the others. On PostgreSQL the
event numbering trigger renumbers a round's row from 0022 on, and no more after the downgrade."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from pioneer_grpc.store import round_usage
from pioneer_grpc.store.migrate import MIGRATIONS
from tests.history.test_open_counts import MOMENT, _alembic
from tests.store.test_round_usage_migration import old_thread


def _downgrade(connection, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    command.downgrade(config, revision)


def _old_round(conn, turn_id: str, input_tokens: int) -> None:
    """A reported round as revision 0021 stores it."""
    conn.execute(
        text(
            "INSERT INTO round_usage (thread_id, turn_id, manifest_event_id, turn_message_count, provider, "
            "model, input_tokens, output_tokens, break_cause, break_detail, break_tokens_invalidated, "
            "break_tokens_kept, reported_at) "
            "VALUES ('t', :u, 7, 1, 3, 'gpt-5', :i, 300, 0, '', 0, 0, :now)"
        ),
        {"u": turn_id, "i": input_tokens, "now": MOMENT},
    )


def _unreported_round(conn, turn_id: str) -> None:
    conn.execute(
        text(
            "INSERT INTO round_usage (thread_id, turn_id, manifest_event_id, turn_message_count, provider, "
            "model, break_cause, break_detail, break_tokens_invalidated, break_tokens_kept, prepared_at) "
            "VALUES ('t', :u, 8, 1, 3, 'gpt-5', 0, '', 0, 0, :now)"
        ),
        {"u": turn_id, "now": MOMENT},
    )


def _rows(conn) -> list[tuple[str, int | None]]:
    found = conn.execute(text("SELECT turn_id, input_tokens FROM round_usage ORDER BY id"))
    return [(row[0], row[1]) for row in found]


def _renumbers_rounds(conn) -> bool:
    source = conn.execute(
        text("SELECT prosrc FROM pg_proc WHERE proname = 'pioneer_number_manifest_event'")
    ).scalar_one()
    return "round_usage" in source


async def test_the_upgrade_keeps_reported_rounds_and_the_downgrade_drops_unreported_ones(empty_database_url):
    engine = create_async_engine(empty_database_url)
    postgres = empty_database_url.startswith("postgresql")
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_alembic, "0021_thread_search")
            await old_thread(conn)
            await conn.run_sync(_old_round, "u1", 100)
            await conn.run_sync(_old_round, "u1", 200)  # the same round twice: the newer stays
            await conn.run_sync(_old_round, "u2", 300)
            await conn.run_sync(_alembic, "head")
            assert await conn.run_sync(_rows) == [("u1", 200), ("u2", 300)]
            found, rounds, _ = await conn.run_sync(round_usage.timeline, "default", "t", 0, 10, False)
            assert rounds == 2 and [r.prepared_at for _, r in found] == [None, None]
            assert all(r.reported for _, r in found)
            await conn.run_sync(_unreported_round, "u3")
            found, rounds, _ = await conn.run_sync(round_usage.timeline, "default", "t", 0, 10, False)
            assert [(n, r.turn_id, r.reported) for n, r in found] == [
                (1, "u1", True),
                (2, "u2", True),
                (3, "u3", False),
            ]
            if postgres:
                assert await conn.run_sync(_renumbers_rounds)
            await conn.run_sync(_downgrade, "0021_thread_search")
            assert await conn.run_sync(_rows) == [("u1", 200), ("u2", 300)]
            if postgres:
                assert not await conn.run_sync(_renumbers_rounds)
            await conn.run_sync(_alembic, "head")
            assert await conn.run_sync(_rows) == [("u1", 200), ("u2", 300)]
    finally:
        await engine.dispose()
