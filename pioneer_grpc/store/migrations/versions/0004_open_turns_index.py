"""An index that answers "which entries are not completed, of which turns" without reading rows.

Every history load and round counts the entries of other turns not completed (to
say what it left out). With only (thread_id, completed, id) that count read each
such row for its turn id; a thread with many open turns paid it on every round.

Revision ID: 0004
Revises: 0003
"""

from alembic import op

revision = "0004"
down_revision = "0003"


def upgrade() -> None:
    op.create_index(
        "ix_entries_thread_completed_turn", "conversation_entries", ["thread_id", "completed", "turn_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_entries_thread_completed_turn", table_name="conversation_entries")
