"""Tool call ids may repeat across a thread's entries: the key is (thread, call id, entry).

Models number their calls (`call_0` again in the next turn); only the calls open
together, those of one assistant entry, need distinct ids. The table is rebuilt
with the entry in its primary key; its rows carry over as they are.

Revision ID: 0009_call_ids_per_turn
Revises: 0008_threads_created
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_call_ids_per_turn"
down_revision = "0008_threads_created"


def _create(name: str, key: tuple[str, ...]) -> None:
    op.create_table(
        name,
        sa.Column("thread_id", sa.String(200), sa.ForeignKey("threads.thread_id", ondelete="CASCADE")),
        sa.Column("call_id", sa.String(200), nullable=False),
        sa.Column("entry_id", sa.String(200), nullable=False),
        sa.PrimaryKeyConstraint(*key, name=f"pk_{name}"),
    )


def _rebuild(key: tuple[str, ...], select_rows: str) -> None:
    _create("tool_calls_rekeyed", key)
    op.execute(f"INSERT INTO tool_calls_rekeyed (thread_id, call_id, entry_id) {select_rows}")
    op.drop_table("tool_calls")
    op.rename_table("tool_calls_rekeyed", "tool_calls")


def upgrade() -> None:
    _rebuild(("thread_id", "call_id", "entry_id"), "SELECT thread_id, call_id, entry_id FROM tool_calls")


def downgrade() -> None:
    # Back to one row per id in a thread: the first entry (by name) that made it stays.
    _rebuild(
        ("thread_id", "call_id"),
        "SELECT thread_id, call_id, min(entry_id) FROM tool_calls GROUP BY thread_id, call_id",
    )
