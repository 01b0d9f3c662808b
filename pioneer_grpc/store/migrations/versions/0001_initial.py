"""Threads, turns, conversation entries, summaries and manifest events.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "threads",
        sa.Column("thread_id", sa.String(200), primary_key=True),
        sa.Column("max_context_tokens", sa.Integer, nullable=False),
        sa.Column("response_reserve_tokens", sa.Integer, nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("summary_model", sa.String(200), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_table(
        "turns",
        sa.Column(
            "thread_id",
            sa.String(200),
            sa.ForeignKey("threads.thread_id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("turn_id", sa.String(200), primary_key=True),
        sa.Column("status", sa.Integer, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("prompt_manifest_json", sa.Text, nullable=True),
        sa.Column("prompt_compiler_version", sa.String(64), nullable=True),
        sa.Column("prompt_profile", sa.String(64), nullable=True),
        sa.Column("prompt_fingerprint_stable", sa.String(64), nullable=True),
        sa.Column("prompt_fingerprint_dynamic", sa.String(64), nullable=True),
        sa.Column("prompt_fingerprint_full", sa.String(64), nullable=True),
        sa.Column("manifest_event_id", sa.BigInteger, nullable=True),
    )
    op.create_table(
        "conversation_entries",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column(
            "thread_id",
            sa.String(200),
            sa.ForeignKey("threads.thread_id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("entry_id", sa.String(200), nullable=False),
        sa.Column("turn_id", sa.String(200), nullable=False),
        sa.Column("role", sa.Integer, nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("tool_calls_json", sa.Text, nullable=False),
        sa.Column("tool_call_id", sa.String(200), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("artifact_refs_json", sa.Text, nullable=False),
        sa.Column("reasoning_content", sa.Text, nullable=True),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("token_count", sa.Integer, nullable=False),
        sa.Column("tokenizer", sa.String(64), nullable=False),
        sa.Column("completed", sa.Boolean, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.UniqueConstraint("thread_id", "entry_id", name="uq_entries_thread_entry"),
    )
    op.create_index(
        "ix_entries_thread_completed_id", "conversation_entries", ["thread_id", "completed", "id"]
    )
    op.create_index("ix_entries_thread_turn", "conversation_entries", ["thread_id", "turn_id"])
    op.create_table(
        "thread_summaries",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column(
            "thread_id",
            sa.String(200),
            sa.ForeignKey("threads.thread_id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("covers_through_sequence", sa.BigInteger, nullable=False),
        sa.Column("covers_through_entry_id", sa.String(200), nullable=False),
        sa.Column("token_count", sa.Integer, nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("summarizer", sa.String(64), nullable=False),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_index("ix_summaries_thread_id", "thread_summaries", ["thread_id", "id"])
    op.create_table(
        "manifest_events",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column("thread_id", sa.String(200), nullable=False),
        sa.Column("turn_id", sa.String(200), nullable=False),
        sa.Column("manifest_pb", sa.LargeBinary, nullable=False),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_index("ix_manifest_events_thread_id", "manifest_events", ["thread_id", "id"])


def downgrade() -> None:
    op.drop_table("manifest_events")
    op.drop_table("thread_summaries")
    op.drop_table("conversation_entries")
    op.drop_table("turns")
    op.drop_table("threads")
