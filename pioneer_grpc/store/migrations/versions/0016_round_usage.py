"""Each round's provider usage, reported by the loop, beside what was expected of its body.

Revision ID: 0016_round_usage
Revises: 0014_compaction_marks
"""

import sqlalchemy as sa
from alembic import op

revision = "0016_round_usage"
down_revision = "0014_compaction_marks"

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "round_usage",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("thread_id", sa.String(200), nullable=False),
        sa.Column("turn_id", sa.String(200), nullable=False),
        sa.Column("manifest_event_id", sa.BigInteger, nullable=False),
        sa.Column("turn_message_count", sa.Integer, nullable=False),
        sa.Column("provider", sa.Integer, nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("input_tokens", sa.BigInteger, nullable=False),
        sa.Column("cache_read_input_tokens", sa.BigInteger, nullable=True),
        sa.Column("cache_write_input_tokens", sa.BigInteger, nullable=True),
        sa.Column("output_tokens", sa.BigInteger, nullable=False),
        sa.Column("reasoning_output_tokens", sa.BigInteger, nullable=True),
        sa.Column("expected_input_tokens", sa.BigInteger, nullable=True),
        sa.Column("expected_cache_read_input_tokens", sa.BigInteger, nullable=True),
        sa.Column("expected_cache_write_input_tokens", sa.BigInteger, nullable=True),
        sa.Column("expected_input_cost_usd", sa.Float, nullable=True),
        sa.Column("reported_input_cost_usd", sa.Float, nullable=True),
        sa.Column("break_cause", sa.Integer, nullable=False),
        sa.Column("break_detail", sa.String(200), nullable=False),
        sa.Column("break_tokens_invalidated", sa.BigInteger, nullable=False),
        sa.Column("break_tokens_kept", sa.BigInteger, nullable=False),
        sa.Column("reported_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "ix_round_usage_round",
        "round_usage",
        ["thread_id", "turn_id", "manifest_event_id", "turn_message_count"],
    )
    op.create_index("ix_round_usage_thread", "round_usage", ["thread_id", "id"])


def downgrade() -> None:
    op.drop_table("round_usage")
