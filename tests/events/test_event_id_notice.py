"""On PostgreSQL the id a commit draws reaches the committer with the COMMIT's answer (migration 0012).

The numbering trigger announces "provisional final" in a NOTICE; the store keeps what each
connection announces. A database (or role) that sends sessions fewer messages must not
hide it: the store's sessions ask for NOTICEs themselves.
"""

from __future__ import annotations

import asyncpg
from sqlalchemy import text

from pioneer_grpc.service.observe import record_manifest
from tests.events.helpers import numbered_manifest


async def test_each_commit_hands_its_own_drawn_id_over_even_where_notices_are_off_by_default(
    postgres_url, server_factory
) -> None:
    admin = await asyncpg.connect(postgres_url.replace("postgresql+asyncpg", "postgresql"))
    try:
        name = await admin.fetchval("SELECT current_database()")
        await admin.execute(f'ALTER DATABASE "{name}" SET client_min_messages = warning')
    finally:
        await admin.close()
    handle = await server_factory(database_url=postgres_url)

    ids = [await record_manifest(handle.ctx, "t", f"turn-{n}", numbered_manifest(n)) for n in range(1, 4)]
    # A repeat draws nothing and answers the turn's id.
    ids.append(await record_manifest(handle.ctx, "t", "turn-2", numbered_manifest(2)))

    async with handle.ctx.store.engine.connect() as conn:
        stored = dict((await conn.execute(text("SELECT turn_id, manifest_event_id FROM turns"))).all())
        events = (await conn.execute(text("SELECT id FROM manifest_events ORDER BY id"))).scalars().all()
        sent = await conn.scalar(text("SHOW client_min_messages"))
    assert ids[0] > 0 and ids[0] < ids[1] < ids[2]
    assert ids[3] == ids[1]
    assert stored == {"turn-1": ids[0], "turn-2": ids[1], "turn-3": ids[2]}
    assert events == ids[:3]
    assert sent == "notice"  # the database's own setting is overridden by the store's sessions
