"""Kept rendered rounds (opt-in: keep_rendered_requests), for the console.

Revision ID: 0007_rendered_rounds
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007_rendered_rounds"
down_revision = "0006"

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "rendered_rounds",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("thread_id", sa.String(200), nullable=False),
        sa.Column("turn_id", sa.String(200), nullable=False),
        sa.Column("round", sa.Integer, nullable=False),
        sa.Column("manifest_event_id", sa.BigInteger, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kept_bytes", sa.Integer, nullable=False),
        sa.Column("round_pb", sa.LargeBinary, nullable=False),
    )
    op.create_index("ix_rendered_rounds_turn", "rendered_rounds", ["thread_id", "turn_id", "id"])
    op.create_index("ix_rendered_rounds_created_at", "rendered_rounds", ["created_at"])


def downgrade() -> None:
    op.drop_table("rendered_rounds")
