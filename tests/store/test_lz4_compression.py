"""On PostgreSQL the long values a round or an append writes are compressed with lz4 (migration 0013).

Only how new values are stored changes: they read back the same.
"""

from __future__ import annotations

import importlib

import pytest
from sqlalchemy import text

from pioneer_grpc.store.engine import create_engine
from pioneer_grpc.store.migrate import migrate
from tests.conftest import fresh_postgres_database

pytestmark = pytest.mark.postgres

_LZ4_AVAILABLE = "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
_LZ4_AVAILABLE = "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
_MIGRATION = importlib.import_module("pioneer_grpc.store.migrations.versions.0013_lz4_compression")


async def test_long_values_are_stored_with_lz4_and_read_back_the_same() -> None:
    async with fresh_postgres_database() as url:
        engine = create_engine(url)
        try:
            await migrate(engine)
            async with engine.begin() as conn:
                if not await conn.scalar(text(_LZ4_AVAILABLE)):
                    pytest.skip("this PostgreSQL has no lz4")
                methods = dict(
                    (
                        await conn.execute(
                            text(
                                "SELECT attrelid::regclass::text || '.' || attname, attcompression::text"
                                " FROM pg_attribute WHERE attnum > 0 AND NOT attisdropped"
                                " AND attrelid::regclass::text = ANY(:tables)"
                            ),
                            {"tables": list(_MIGRATION.COLUMNS)},
                        )
                    ).all()
                )
                long_json = '{"sections": [' + ", ".join(f'"section {n}"' for n in range(2000)) + "]}"
                await conn.execute(
                    text(
                        "INSERT INTO threads (thread_id, max_context_tokens, response_reserve_tokens, model,"
                        " summary_model, created_at, updated_at) VALUES ('t', 1, 1, '', '', now(), now())"
                    )
                )
                await conn.execute(
                    text(
                        "INSERT INTO turns (thread_id, turn_id, status, created_at, updated_at,"
                        " prompt_manifest_json) VALUES ('t', 'u', 1, now(), now(), :json)"
                    ),
                    {"json": long_json},
                )
                stored = (
                    await conn.execute(
                        text(
                            "SELECT prompt_manifest_json, pg_column_compression(prompt_manifest_json)"
                            " FROM turns"
                        )
                    )
                ).one()
        finally:
            await engine.dispose()
    expected = {f"{table}.{column}" for table, columns in _MIGRATION.COLUMNS.items() for column in columns}
    assert {name for name, method in methods.items() if method == "l"} == expected
    assert stored == (long_json, "lz4")
