"""Each thread keeps how many completed entries it has.

Every round and history load reads the thread's history state, whose version
includes that count. Counted from rows, it grew with the thread; kept on the
thread row by the completions themselves (in their own transactions, under the
thread's lock, the only writes that complete entries), it is read with the row.

Revision ID: 0011_completed_entry_counts
Revises: 0010_entry_content_parts
"""

import sqlalchemy as sa
from alembic import op

revision = "0011_completed_entry_counts"
down_revision = "0010_entry_content_parts"

_BACKFILL = """
UPDATE threads SET completed_entries = (
    SELECT count(*) FROM conversation_entries e WHERE e.thread_id = threads.thread_id AND e.completed
)
"""


def upgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.add_column(sa.Column("completed_entries", sa.Integer, nullable=False, server_default="0"))
    op.execute(_BACKFILL)


def downgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.drop_column("completed_entries")
