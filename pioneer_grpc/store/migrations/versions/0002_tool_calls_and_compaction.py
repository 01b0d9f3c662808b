"""Tool call ids per thread (unique), and the thread's compaction settings and failure mark.

Revision ID: 0002
Revises: 0001
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"


def upgrade() -> None:
    tool_calls = op.create_table(
        "tool_calls",
        sa.Column(
            "thread_id",
            sa.String(200),
            sa.ForeignKey("threads.thread_id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("call_id", sa.String(200), primary_key=True),
        sa.Column("entry_id", sa.String(200), nullable=False),
    )
    with op.batch_alter_table("threads") as batch:
        batch.add_column(sa.Column("compaction_strategy", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("keep_tool_results", sa.Integer, nullable=True))
        batch.add_column(sa.Column("compaction_failed_sequence", sa.BigInteger, nullable=True))
    _backfill(tool_calls)


def _backfill(tool_calls: sa.Table) -> None:
    """Calls stored before this revision; a duplicate id (older versions allowed it) keeps its first entry."""
    entries = sa.table(
        "conversation_entries",
        sa.column("id", sa.BigInteger),
        sa.column("thread_id", sa.String),
        sa.column("entry_id", sa.String),
        sa.column("tool_calls_json", sa.Text),
    )
    bind = op.get_bind()
    rows = bind.execute(
        sa.select(entries.c.thread_id, entries.c.entry_id, entries.c.tool_calls_json)
        .where(entries.c.tool_calls_json != "[]")
        .order_by(entries.c.id)
    )
    seen: set[tuple[str, str]] = set()
    batch: list[dict[str, str]] = []
    for thread_id, entry_id, calls_json in rows:
        for call in json.loads(calls_json):
            key = (thread_id, call.get("id", ""))
            if key[1] and key not in seen:
                seen.add(key)
                batch.append({"thread_id": thread_id, "call_id": key[1], "entry_id": entry_id})
    if batch:
        op.bulk_insert(tool_calls, batch)


def downgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.drop_column("compaction_failed_sequence")
        batch.drop_column("keep_tool_results")
        batch.drop_column("compaction_strategy")
    op.drop_table("tool_calls")
