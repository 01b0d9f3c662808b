"""Which threads the retention sweeper deletes: those without a write for their retention.

A thread's retention is its own (`threads.retention_days`) or, when it has none (NULL), the
server's. The index on (retention_days, updated_at, thread_id) (migration 0019) holds the
threads of one retention oldest write first: each retention's expired threads are a range of
it, read from its start up to the first thread that is not expired. The distinct retentions
threads set for themselves are read from the same index.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from pioneer_grpc.store.models import ThreadRow
from pioneer_grpc.store.port import Expiry

# The sweeper's lock: a name no thread id can have (ids may not hold NUL), so it is no thread's
# compression lock (store/locks.py).
SWEEPER_LOCK = "\x00retention-sweeper"


def _oldest(
    conn: Connection, of_retention: Any, days: int, expiry: Expiry, limit: int
) -> list[tuple[str, str]]:
    cutoff = expiry.moment - timedelta(days=days)
    statement = (
        select(ThreadRow.tenant, ThreadRow.thread_id)
        .where(of_retention, ThreadRow.updated_at < cutoff)
        .order_by(ThreadRow.updated_at, ThreadRow.thread_id)
        .limit(limit)
    )
    return [(tenant, thread_id) for tenant, thread_id in conn.execute(statement)]


def expired_in(conn: Connection, expiry: Expiry, limit: int) -> list[tuple[str, str]]:
    """Up to `limit` expired threads of every tenant, as (tenant, thread id): the server's
    retention's first, then each thread's own."""
    found: list[tuple[str, str]] = []
    if expiry.default_days > 0:
        found += _oldest(conn, ThreadRow.retention_days.is_(None), expiry.default_days, expiry, limit)
    own = (
        select(ThreadRow.retention_days)
        .where(ThreadRow.retention_days > 0)
        .distinct()
        .order_by(ThreadRow.retention_days)
    )
    for days in conn.execute(own).scalars().all():
        if len(found) >= limit:
            break
        found += _oldest(conn, ThreadRow.retention_days == days, int(days or 0), expiry, limit - len(found))
    return found
