"""Section texts kept once per thread and fingerprint (DiffManifests shows the lines that changed),
and per reported round the entries its history break summarized, cleared or dropped, and its history
decision (the thread's timeline). Indexes for ListThreads by update time, by model, and with cache
breaks.

Revision ID: 0020_section_texts
Revises: 0019_retention
"""

import sqlalchemy as sa
from alembic import op

revision = "0020_section_texts"
down_revision = "0019_retention"


def upgrade() -> None:
    op.create_table(
        "section_texts",
        sa.Column("thread_id", sa.String(200), primary_key=True),
        sa.Column("tenant", sa.String(100), primary_key=True, server_default="default"),
        sa.Column("fingerprint", sa.String(64), primary_key=True),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["thread_id", "tenant"],
            ["threads.thread_id", "threads.tenant"],
            ondelete="CASCADE",
            name="fk_section_texts_thread",
        ),
    )
    with op.batch_alter_table("round_usage") as batch:
        batch.add_column(sa.Column("break_entry_ids", sa.Text, nullable=False, server_default=""))
        batch.add_column(sa.Column("break_entry_count", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("history_decision", sa.Integer, nullable=False, server_default="0"))
    op.create_index("ix_threads_updated_at", "threads", ["updated_at", "thread_id"])
    op.create_index("ix_threads_model_updated_at", "threads", ["model", "updated_at", "thread_id"])
    broke = sa.text("break_cause <> 0")
    op.create_index(
        "ix_round_usage_breaks", "round_usage", ["thread_id"], sqlite_where=broke, postgresql_where=broke
    )


def downgrade() -> None:
    op.drop_index("ix_round_usage_breaks", "round_usage")
    op.drop_index("ix_threads_model_updated_at", "threads")
    op.drop_index("ix_threads_updated_at", "threads")
    with op.batch_alter_table("round_usage") as batch:
        batch.drop_column("history_decision")
        batch.drop_column("break_entry_count")
        batch.drop_column("break_entry_ids")
    op.drop_table("section_texts")
