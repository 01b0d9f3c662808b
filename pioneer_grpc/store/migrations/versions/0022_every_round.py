"""Every round a PrepareTurn commits has its row on the thread's timeline, reported or not.

A round's commit now writes its row in round_usage (its time, provider, model, history decision
and prefix break) and a report of its usage fills it in later: the reported figures and the report
time are NULL until then, and `prepared_at` says when the commit wrote it (NULL for the rows
reported before this revision). The round's key (with the tenant) becomes unique, so a round
committed again (a PrepareTurn sent again) keeps its one row: duplicates, which no release wrote,
would be dropped first, the newest kept.

PostgreSQL: the commit writes the row in its one statement with the turn's event id, which is
provisional (negative) until the deferred trigger of migrations 0005 and 0012 draws the real one
at COMMIT; the trigger now renumbers the round's row with the event and the turn.

Downgrade drops the rows no usage was reported for (the revision before has no place for them).

Revision ID: 0022_every_round
Revises: 0021_thread_search
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy import text

revision = "0022_every_round"
down_revision = "0021_thread_search"

_KEY = ["thread_id", "turn_id", "manifest_event_id", "turn_message_count"]
# Unique with the tenant, as every key naming a thread is (0018).
_UNIQUE = [*_KEY, "tenant"]
_REPORTED = ("input_tokens", "output_tokens", "reported_at")
# As migrations 0005 and 0012 have them.
_LOCK = "1346981710, 1296389716"
_SETTING = "pioneer.manifest_event_id"
_CHANNEL = "pioneer_manifest_events"


def _numbering(rounds: bool) -> str:
    """Migration 0012's trigger function, renumbering the round's row too with `rounds`."""
    ids = op.get_bind().execute(text("SELECT pg_get_serial_sequence('manifest_events', 'id')")).scalar_one()
    renumber_round = (
        """UPDATE round_usage SET manifest_event_id = final_id
             WHERE thread_id = NEW.thread_id AND tenant = NEW.tenant AND turn_id = NEW.turn_id
               AND manifest_event_id = NEW.id;"""
        if rounds
        else ""
    )
    return f"""
        CREATE OR REPLACE FUNCTION pioneer_number_manifest_event() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
            final_id bigint;
        BEGIN
            PERFORM pg_advisory_xact_lock({_LOCK});
            final_id := nextval('{ids}');
            UPDATE manifest_events SET id = final_id WHERE id = NEW.id;
            UPDATE turns SET manifest_event_id = final_id
             WHERE thread_id = NEW.thread_id AND turn_id = NEW.turn_id AND manifest_event_id = NEW.id;
            {renumber_round}
            PERFORM set_config('{_SETTING}', NEW.id || ' ' || final_id, false);
            RAISE NOTICE '{_SETTING}: %', NEW.id || ' ' || final_id;
            PERFORM pg_notify('{_CHANNEL}', final_id::text);
            RETURN NULL;
        END $$
        """


def upgrade() -> None:
    key = " AND ".join(f"later.{name} = round_usage.{name}" for name in _UNIQUE)
    op.execute(
        "DELETE FROM round_usage WHERE EXISTS"
        f" (SELECT 1 FROM round_usage AS later WHERE {key} AND later.id > round_usage.id)"
    )
    op.drop_index("ix_round_usage_round", "round_usage")
    with op.batch_alter_table("round_usage") as batch:
        for name in _REPORTED:
            batch.alter_column(name, nullable=True)
        batch.add_column(sa.Column("prepared_at", sa.DateTime(timezone=True), nullable=True))
    op.create_index("ix_round_usage_round", "round_usage", _UNIQUE, unique=True)
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_numbering(rounds=True))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_numbering(rounds=False))
    op.execute(" ".join(("DELETE FROM round_usage WHERE", " OR ".join(f"{n} IS NULL" for n in _REPORTED))))
    op.drop_index("ix_round_usage_round", "round_usage")
    with op.batch_alter_table("round_usage") as batch:
        batch.drop_column("prepared_at")
        for name in _REPORTED:
            batch.alter_column(name, nullable=False)
    op.create_index("ix_round_usage_round", "round_usage", _KEY)
