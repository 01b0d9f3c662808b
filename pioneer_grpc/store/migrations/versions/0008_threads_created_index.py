"""An index for threads newest first: ListThreads ordered by create_time desc reads it backwards.

Without it the newest-first page sorted every thread (SQLite: a temporary
B-tree; PostgreSQL: a sort over a sequential scan) to return the first few.
With (created_at, thread_id), the order and the keyset condition of the next
page are both answered by the index, read backwards, on SQLite and PostgreSQL.

Revision ID: 0008_threads_created
Revises: 0007_rendered_rounds
"""

from alembic import op

revision = "0008_threads_created"
down_revision = "0007_rendered_rounds"


def upgrade() -> None:
    op.create_index("ix_threads_created_at", "threads", ["created_at", "thread_id"])


def downgrade() -> None:
    op.drop_index("ix_threads_created_at", table_name="threads")
