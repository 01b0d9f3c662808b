"""Section texts kept once per thread and fingerprint (DiffManifests shows the lines that changed),
and per reported round the entries its history break summarized, cleared or dropped, and its history
decision (the thread's timeline).

Revision ID: 0020_section_texts
Revises: 0017_entry_is_error
"""

import sqlalchemy as sa
from alembic import op

revision = "0020_section_texts"
down_revision = "0017_entry_is_error"


def upgrade() -> None:
    op.create_table(
        "section_texts",
        sa.Column(
            "thread_id",
            sa.String(200),
            sa.ForeignKey("threads.thread_id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("fingerprint", sa.String(64), primary_key=True),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    with op.batch_alter_table("round_usage") as batch:
        batch.add_column(sa.Column("break_entry_ids", sa.Text, nullable=False, server_default=""))
        batch.add_column(sa.Column("break_entry_count", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("history_decision", sa.Integer, nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("round_usage") as batch:
        batch.drop_column("history_decision")
        batch.drop_column("break_entry_count")
        batch.drop_column("break_entry_ids")
    op.drop_table("section_texts")
