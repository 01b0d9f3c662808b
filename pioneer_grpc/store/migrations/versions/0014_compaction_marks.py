"""Threads keep where compaction starts and stops, how much clearing must free, and where the
dynamic half of the system prompt goes in provider bodies (ThreadConfig).

NULL (or 0 for the placement) means the default, so existing threads read as before
but for the defaults themselves (service/history.py names them).

Revision ID: 0014_compaction_marks
Revises: 0013_lz4_compression
"""

import sqlalchemy as sa
from alembic import op

revision = "0014_compaction_marks"
down_revision = "0013_lz4_compression"

_PERCENTS = ("compaction_trigger_percent", "compaction_low_water_percent", "clear_at_least_percent")


def upgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        for name in _PERCENTS:
            batch.add_column(sa.Column(name, sa.Integer, nullable=True))
        batch.add_column(
            sa.Column("dynamic_context_placement", sa.Integer, nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.drop_column("dynamic_context_placement")
        for name in reversed(_PERCENTS):
            batch.drop_column(name)
