"""PostgreSQL: a manifest event's id is drawn when its transaction commits.

Observers resume "after id N", so an id must never become visible after a larger
one. Until now every recorder took a global advisory lock before inserting its
event and held it to commit, with the client's own pauses between statements
inside it: rounds of every worker queued on it. Now a round inserts its event
with a provisional negative id, and a deferred constraint trigger runs inside the
COMMIT: it takes the same advisory lock, draws the id from the sequence,
renumbers the event and its turn's pointer, leaves "provisional final" in the
session setting `pioneer.manifest_event_id` for the recorder to read after commit
(the provisional id tells a stale value apart), and notifies the listening
replicas. The lock is released when the commit is visible, so commit order still
equals id order, and it is held only inside the server.

A server of the previous release (ids drawn under the lock at insert) inserts
positive ids, which the trigger leaves alone, and takes the same lock: both can
run against one database during an upgrade.

SQLite has one writer, so its ids are already in commit order: nothing changes.

Revision ID: 0005
Revises: 0004
"""

from alembic import op
from sqlalchemy import text

revision = "0005"
down_revision = "0004"

# The (namespace, key) pair recorders have always locked, so old and new servers agree.
_LOCK = "1346981710, 1296389716"
_SETTING = "pioneer.manifest_event_id"
_CHANNEL = "pioneer_manifest_events"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    ids = op.get_bind().execute(text("SELECT pg_get_serial_sequence('manifest_events', 'id')")).scalar_one()
    op.execute("CREATE SEQUENCE manifest_events_provisional_id_seq")
    op.execute(
        f"""
        CREATE FUNCTION pioneer_number_manifest_event() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
            final_id bigint;
        BEGIN
            PERFORM pg_advisory_xact_lock({_LOCK});
            final_id := nextval('{ids}');
            UPDATE manifest_events SET id = final_id WHERE id = NEW.id;
            UPDATE turns SET manifest_event_id = final_id
             WHERE thread_id = NEW.thread_id AND turn_id = NEW.turn_id AND manifest_event_id = NEW.id;
            PERFORM set_config('{_SETTING}', NEW.id || ' ' || final_id, false);
            PERFORM pg_notify('{_CHANNEL}', final_id::text);
            RETURN NULL;
        END $$
        """
    )
    op.execute(
        """
        CREATE CONSTRAINT TRIGGER manifest_event_numbered_at_commit
        AFTER INSERT ON manifest_events DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW WHEN (NEW.id < 0) EXECUTE FUNCTION pioneer_number_manifest_event()
        """
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER manifest_event_numbered_at_commit ON manifest_events")
    op.execute("DROP FUNCTION pioneer_number_manifest_event()")
    op.execute("DROP SEQUENCE manifest_events_provisional_id_seq")
