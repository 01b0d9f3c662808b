"""Migration 0017 adds ConversationEntry.is_error: entries stored before it load unmarked, with their
content hash as it was (a retried append of one still matches), on both backends."""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from pioneer_grpc.history.entries import content_hash
from pioneer_grpc.models.registry import packaged_registry
from pioneer_grpc.store.engine import create_engine
from pioneer_grpc.store.migrate import MIGRATIONS
from pioneer_grpc.store.port import AppendOutcome
from pioneer_grpc.store.sql import open_store
from pioneer_grpc.v1 import history_pb2
from tests.store.contract.rows import batch

MOMENT = datetime(2026, 12, 1, tzinfo=UTC)
RESULT = history_pb2.ConversationEntry(
    entry_id="r1", turn_id="u1", role=history_pb2.ENTRY_ROLE_TOOL, tool_call_id="k1", name="f", content="x"
)


def _alembic(connection, revision: str) -> None:  # type: ignore[no-untyped-def]
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


async def test_entries_stored_before_load_unmarked_and_hash_as_before(empty_database_url: str) -> None:
    engine = create_async_engine(empty_database_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_alembic, "0014_compaction_marks")
            await conn.execute(
                text(
                    "INSERT INTO threads (thread_id, max_context_tokens, response_reserve_tokens, model, "
                    "summary_model, created_at, updated_at, compaction_strategy, open_entries, open_turns) "
                    "VALUES ('t', 8000, 1000, '', '', :now, :now, 0, 1, 1)"
                ),
                {"now": MOMENT},
            )
            await conn.execute(
                text(
                    "INSERT INTO conversation_entries (thread_id, entry_id, turn_id, role, content, "
                    "tool_calls_json, tool_call_id, name, artifact_refs_json, content_hash, token_count, "
                    "tokenizer, completed, created_at) VALUES ('t', 'r1', 'u1', 3, 'x', '[]', 'k1', 'f', "
                    "'[]', :hash, 1, 'cl100k_base', false, :now)"
                ),
                {"hash": content_hash(RESULT), "now": MOMENT},
            )
            await conn.run_sync(_alembic, "head")
            stored = (await conn.execute(text("SELECT is_error FROM conversation_entries"))).scalars().all()
    finally:
        await engine.dispose()
    assert [bool(v) for v in stored] == [False]
    store = open_store(create_engine(empty_database_url), packaged_registry().tokenizer_of)
    try:
        listed, _ = await store.listing.entries("t", "u1", 0, 10)
        assert [(e.entry_id, e.is_error) for e in listed] == [("r1", False)]
        repeat = await store.entries.append(batch("t", RESULT))
        assert isinstance(repeat, AppendOutcome) and repeat.existing_count == 1
    finally:
        await store.close()
