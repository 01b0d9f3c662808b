"""A tool result may report that its tool failed (ConversationEntry.is_error): false for every
entry stored before, so they load and hash as they did.

Revision ID: 0017_entry_is_error
Revises: 0016_round_usage
"""

import sqlalchemy as sa
from alembic import op

revision = "0017_entry_is_error"
down_revision = "0016_round_usage"


def upgrade() -> None:
    with op.batch_alter_table("conversation_entries") as batch:
        batch.add_column(sa.Column("is_error", sa.Boolean, nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("conversation_entries") as batch:
        batch.drop_column("is_error")
