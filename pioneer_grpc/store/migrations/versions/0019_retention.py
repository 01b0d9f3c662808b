"""A thread's own retention (ThreadConfig.retention_days; NULL: the server's --retention-days), and
the index the retention sweeper finds expired threads by: threads of one retention oldest write
first, so a sweep reads the expired ones and stops at the first that is not.

Revision ID: 0019_retention
Revises: 0018_thread_tenants
"""

import sqlalchemy as sa
from alembic import op

revision = "0019_retention"
down_revision = "0018_thread_tenants"


def upgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.add_column(sa.Column("retention_days", sa.Integer, nullable=True))
    op.create_index("ix_threads_retention", "threads", ["retention_days", "updated_at", "thread_id"])


def downgrade() -> None:
    op.drop_index("ix_threads_retention", table_name="threads")
    with op.batch_alter_table("threads") as batch:
        batch.drop_column("retention_days")
