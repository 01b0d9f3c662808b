"""Migration 0018 on a database holding threads: every row stays, each the default tenant's, and
afterwards two tenants may each hold a thread of the same id (SQLite with its foreign keys on,
as the server opens it, and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from pioneer_grpc.store.engine import create_engine
from tests.history.test_open_counts import _alembic

MOMENT = datetime(2026, 12, 1, tzinfo=UTC)

_THREAD = (
    "INSERT INTO threads (thread_id, max_context_tokens, response_reserve_tokens, model, summary_model, "
    "created_at, updated_at) VALUES (:t, 1000, 100, '', '', :now, :now)"
)
_ENTRY = (
    "INSERT INTO conversation_entries (thread_id, entry_id, turn_id, role, content, tool_calls_json, "
    "tool_call_id, name, artifact_refs_json, content_hash, token_count, tokenizer, completed, created_at) "
    "VALUES (:t, :e, 'u1', 1, 'x', '[]', '', '', '[]', 'h', 1, 'cl100k_base', true, :now)"
)
_USAGE = (
    "INSERT INTO round_usage (thread_id, turn_id, manifest_event_id, turn_message_count, provider, model, "
    "input_tokens, output_tokens, break_cause, break_detail, break_tokens_invalidated, break_tokens_kept, "
    "reported_at) VALUES (:t, 'u1', 1, 1, 1, 'm', 10, 1, 0, '', 0, 0, :now)"
)
_SEEDED = [
    _THREAD,
    "INSERT INTO turns (thread_id, turn_id, status, created_at, updated_at) VALUES (:t, 'u1', 1, :now, :now)",
    _ENTRY,
    "INSERT INTO tool_calls (thread_id, call_id, entry_id) VALUES (:t, 'call_0', :e)",
    "INSERT INTO thread_summaries (thread_id, text, covers_through_sequence, covers_through_entry_id, "
    "token_count, model, summarizer, created_at) VALUES (:t, 's', 1, :e, 1, '', 'x', :now)",
    "INSERT INTO manifest_events (thread_id, turn_id, manifest_pb, created_at) VALUES (:t, 'u1', :pb, :now)",
    "INSERT INTO rendered_rounds (thread_id, turn_id, round, manifest_event_id, created_at, kept_bytes, "
    "round_pb) VALUES (:t, 'u1', 1, 1, :now, 1, :pb)",
    _USAGE,
]
_TABLES = (
    "threads",
    "turns",
    "conversation_entries",
    "tool_calls",
    "thread_summaries",
    "manifest_events",
    "rendered_rounds",
    "round_usage",
)


async def test_existing_threads_become_the_default_tenants(empty_database_url):
    engine = create_engine(empty_database_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_alembic, "0017_entry_is_error")
            for thread in ("t-1", "t-2"):
                params = {"t": thread, "e": f"{thread}-e1", "now": MOMENT, "pb": b"\x01"}
                for statement in _SEEDED:
                    await conn.execute(text(statement), params)
            await conn.execute(
                text(
                    "INSERT INTO entry_token_counts (entry_sequence, tokenizer, token_count) "
                    "SELECT id, 'o200k_base', 7 FROM conversation_entries"
                )
            )
            failing = "UPDATE conversation_entries SET is_error = true WHERE thread_id = 't-1'"
            await conn.execute(text(failing))
            await conn.run_sync(_alembic, "head")
        async with engine.begin() as conn:
            for table in _TABLES:
                found = (await conn.execute(text(f"SELECT tenant, thread_id FROM {table} ORDER BY 2"))).all()
                assert [tuple(row) for row in found] == [("default", "t-1"), ("default", "t-2")], table
            failed = await conn.execute(
                text("SELECT thread_id, is_error FROM conversation_entries ORDER BY 1")
            )
            assert [tuple(row) for row in failed] == [("t-1", True), ("t-2", False)]
            counts = (await conn.execute(text("SELECT count(*) FROM entry_token_counts"))).scalar_one()
            assert counts == 2
            # Another tenant's thread of the same id, with its own entry of the same id.
            params = {"t": "t-1", "e": "t-1-e1", "now": MOMENT}
            await conn.execute(
                text(_THREAD.replace("(thread_id", "(tenant, thread_id").replace("(:t", "('acme', :t")),
                params,
            )
            await conn.execute(
                text(_ENTRY.replace("(thread_id", "(tenant, thread_id").replace("(:t", "('acme', :t")), params
            )
            both = (
                await conn.execute(text("SELECT tenant FROM threads WHERE thread_id = 't-1' ORDER BY 1"))
            ).all()
            assert [row[0] for row in both] == ["acme", "default"]
        # Within one tenant an id is still unique, and an entry needs its tenant's thread.
        with pytest.raises(IntegrityError):
            async with engine.begin() as conn:
                await conn.execute(text(_THREAD), {"t": "t-1", "now": MOMENT})
        with pytest.raises(IntegrityError):
            async with engine.begin() as conn:
                entry = _ENTRY.replace("(thread_id", "(tenant, thread_id").replace("(:t", "('other', :t")
                await conn.execute(text(entry), {"t": "t-2", "e": "x", "now": MOMENT})
    finally:
        await engine.dispose()
