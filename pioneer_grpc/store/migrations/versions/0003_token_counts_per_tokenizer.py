"""Token counts per tokenizer: entries' and summaries' counts in tokenizers other than their first.

A thread that moves to a model of another family is recounted lazily: the first
load in the new tokenizer counts what it reads and stores it here. Summaries
record the tokenizer of their own count ("" for those stored before: counted again
once, like entries).

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "entry_token_counts",
        sa.Column(
            "entry_sequence",
            ID,
            sa.ForeignKey("conversation_entries.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("tokenizer", sa.String(64), primary_key=True),
        sa.Column("token_count", sa.Integer, nullable=False),
    )
    op.create_table(
        "summary_token_counts",
        sa.Column(
            "summary_id",
            ID,
            sa.ForeignKey("thread_summaries.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("tokenizer", sa.String(64), primary_key=True),
        sa.Column("token_count", sa.Integer, nullable=False),
    )
    with op.batch_alter_table("thread_summaries") as batch:
        batch.add_column(sa.Column("tokenizer", sa.String(64), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("thread_summaries") as batch:
        batch.drop_column("tokenizer")
    op.drop_table("summary_token_counts")
    op.drop_table("entry_token_counts")
