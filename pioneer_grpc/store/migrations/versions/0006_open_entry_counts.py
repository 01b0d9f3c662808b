"""Each thread keeps how many entries of turns not completed it has, and of how many turns.

Every history load and round says what it leaves out: entries of other turns not
completed. Counted from rows, that grew with every open turn of the thread; kept
on the thread row by the appends and completions themselves (in their own
transactions, under the thread's lock), it is read with the thread's state.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"

_BACKFILL = """
UPDATE threads SET
    open_entries = (
        SELECT count(*) FROM conversation_entries e
        WHERE e.thread_id = threads.thread_id AND NOT e.completed
    ),
    open_turns = (
        SELECT count(DISTINCT e.turn_id) FROM conversation_entries e
        WHERE e.thread_id = threads.thread_id AND NOT e.completed
    )
"""


def upgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.add_column(sa.Column("open_entries", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("open_turns", sa.Integer, nullable=False, server_default="0"))
    op.execute(_BACKFILL)


def downgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.drop_column("open_turns")
        batch.drop_column("open_entries")
