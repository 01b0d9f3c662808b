"""PostgreSQL connections the server closed while they sat in the pool are replaced at checkout: the
next calls succeed, with no ping before each unit of work and no UNAVAILABLE."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest
from sqlalchemy import event

from pioneer_grpc.store.engine import pool_state
from pioneer_grpc.v1 import history_pb2, history_service_pb2
from tests.support import eventually

pytestmark = pytest.mark.postgres
CALLS = 8


def _returned(engine: Any) -> dict[int, Any]:
    """The asyncpg connections given back to the pool from now on, by id (filled as they come)."""
    seen: dict[int, Any] = {}

    def checkin(dbapi_conn: Any, _record: Any) -> None:
        if dbapi_conn is not None:
            seen[id(dbapi_conn)] = dbapi_conn.driver_connection

    event.listen(engine.sync_engine, "checkin", checkin)
    return seen


async def _terminate(url: str, pids: list[int]) -> int:
    """Ends those backends only (the server's other connections, its event listener's, stay up)."""
    conn = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        ended = await conn.fetch("SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid", pids)
    finally:
        await conn.close()
    return sum(1 for row in ended if row[0])


def _append(thread_id: str, n: int) -> history_service_pb2.AppendEntriesRequest:
    entry = history_pb2.ConversationEntry(entry_id=f"e{n}", turn_id=f"u{n}", role=1, content=f"text {n}")
    return history_service_pb2.AppendEntriesRequest(thread_id=thread_id, entries=[entry])


async def test_connections_closed_by_the_server_are_replaced_before_use(postgres_url, server_factory):
    server = await server_factory(database_url=postgres_url, health_probe_seconds=3600)
    client = await server.client()
    engine = server.ctx.store.engine
    returned = _returned(engine)
    await client.create_thread(thread_id="t")
    # Several at once, so the pool holds several connections.
    await asyncio.gather(*(client.append_entries(_append("t", n)) for n in range(CALLS)))
    pooled = list(returned.values())
    assert pooled, "the pool keeps connections between calls"
    assert await _terminate(postgres_url, [conn.get_server_pid() for conn in pooled]) == len(pooled)
    await eventually(lambda: all(conn.is_closed() for conn in pooled))
    for n in range(CALLS, 2 * CALLS):  # one at a time: each checks a connection out of the pool
        response = await client.append_entries(_append("t", n))
        assert response.created_count == 1
    assert pool_state(engine).open >= 1
