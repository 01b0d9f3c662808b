"""PostgreSQL: the columns a round or an append writes at length compress their new values with lz4.

A value over about 2 kB is compressed before it is stored, by default with pglz:
every round stores its manifest twice (the turn's JSON, about 9 kB in the agent
loop's benchmark, and the event's encoded copy) and every append its entries'
texts, and pglz took about 0.1 ms of the server's time for each such JSON, lz4 a
quarter of it for about the same size. Only new
values are written with lz4; stored ones stay as they are, and every value reads
the same either way.

A server built without lz4 (or older than PostgreSQL 14) keeps pglz: nothing changes.
SQLite does not compress: nothing changes.

Revision ID: 0013_lz4_compression
Revises: 0012_event_id_notice
"""

from alembic import op
from sqlalchemy import text

revision = "0013_lz4_compression"
down_revision = "0012_event_id_notice"

COLUMNS = {
    "turns": ("prompt_manifest_json",),
    "manifest_events": ("manifest_pb",),
    "conversation_entries": (
        "content",
        "tool_calls_json",
        "artifact_refs_json",
        "reasoning_content",
        "content_parts_pb",
    ),
}


def _lz4_available() -> bool:
    found = op.get_bind().execute(
        text("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
    )
    return bool(found.scalar())


def _compress_with(method: str) -> None:
    if op.get_bind().dialect.name != "postgresql" or not _lz4_available():
        return
    for table, columns in COLUMNS.items():
        changes = ", ".join(f"ALTER COLUMN {column} SET COMPRESSION {method}" for column in columns)
        op.execute(f"ALTER TABLE {table} {changes}")


def upgrade() -> None:
    _compress_with("lz4")


def downgrade() -> None:
    _compress_with("default")
