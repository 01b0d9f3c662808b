"""PostgreSQL: the trigger that draws a manifest event's id at commit also announces it in a NOTICE.

Migration 0005's trigger leaves "provisional final" in the session setting
`pioneer.manifest_event_id`, which the committing server read with one more round
trip after every COMMIT that drew an id. The trigger now also sends the same
value to the committing session as a NOTICE, "pioneer.manifest_event_id: <value>",
which arrives with the COMMIT's own answer (store/engine.py keeps it by
connection): no round trip. The setting is still left, as a server of the
previous release reads it.

SQLite draws no id at commit: nothing changes.

Revision ID: 0012_event_id_notice
Revises: 0011_completed_entry_counts
"""

from alembic import op
from sqlalchemy import text

revision = "0012_event_id_notice"
down_revision = "0011_completed_entry_counts"

# As migration 0005 has them.
_LOCK = "1346981710, 1296389716"
_SETTING = "pioneer.manifest_event_id"
_CHANNEL = "pioneer_manifest_events"


def _numbering(announced: bool) -> str:
    notice = f"RAISE NOTICE '{_SETTING}: %', NEW.id || ' ' || final_id;" if announced else ""
    ids = op.get_bind().execute(text("SELECT pg_get_serial_sequence('manifest_events', 'id')")).scalar_one()
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
            PERFORM set_config('{_SETTING}', NEW.id || ' ' || final_id, false);
            {notice}
            PERFORM pg_notify('{_CHANNEL}', final_id::text);
            RETURN NULL;
        END $$
        """


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_numbering(announced=True))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_numbering(announced=False))
