"""Entries carry content parts (text, images, documents): one serialized column, NULL without any.

Revision ID: 0010_entry_content_parts
Revises: 0009_call_ids_per_turn
"""

import sqlalchemy as sa
from alembic import op

revision = "0010_entry_content_parts"
down_revision = "0009_call_ids_per_turn"


def upgrade() -> None:
    with op.batch_alter_table("conversation_entries") as batch:
        batch.add_column(sa.Column("content_parts_pb", sa.LargeBinary, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("conversation_entries") as batch:
        batch.drop_column("content_parts_pb")
