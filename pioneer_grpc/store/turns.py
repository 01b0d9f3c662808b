"""How a thread or a turn comes to exist implicitly, said once.

An append creates the turns its entries name; recording a manifest creates the
thread (with the default budget) and the turn when a compile names them first.
Both are inserts that tolerate a concurrent creator (ON CONFLICT), on SQLite and
PostgreSQL alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from pioneer_grpc.history.budget import DEFAULT_MAX_CONTEXT_TOKENS, DEFAULT_RESPONSE_RESERVE_TOKENS
from pioneer_grpc.store.clock import now
from pioneer_grpc.store.models import ThreadRow, TurnRow
from pioneer_grpc.v1 import history_pb2

Bind = AsyncConnection | AsyncSession


def insert(bind: Bind, model: Any) -> Any:
    """The dialect's INSERT, which has ON CONFLICT."""
    name = bind.get_bind().dialect.name if isinstance(bind, AsyncSession) else bind.dialect.name
    return (postgresql if name == "postgresql" else sqlite).insert(model)


async def ensure_thread(bind: Bind, thread_id: str) -> None:
    """Creates the thread with the default budget unless it exists."""
    moment = now()
    await bind.execute(
        insert(bind, ThreadRow)
        .values(
            thread_id=thread_id,
            max_context_tokens=DEFAULT_MAX_CONTEXT_TOKENS,
            response_reserve_tokens=DEFAULT_RESPONSE_RESERVE_TOKENS,
            model="",
            summary_model="",
            created_at=moment,
            updated_at=moment,
        )
        .on_conflict_do_nothing(index_elements=["thread_id"])
    )


async def ensure_turns(bind: Bind, thread_id: str, turn_ids: Sequence[str], *, lock: bool = False) -> None:
    """Creates each turn (in progress) unless it exists.

    With `lock`, an existing row is touched (DO UPDATE rather than DO NOTHING) so
    that this same statement locks it until the transaction ends.
    """
    moment = now()
    for turn_id in turn_ids:
        statement = insert(bind, TurnRow).values(
            thread_id=thread_id,
            turn_id=turn_id,
            status=history_pb2.TURN_STATUS_IN_PROGRESS,
            created_at=moment,
            updated_at=moment,
        )
        keys = ["thread_id", "turn_id"]
        if lock:
            statement = statement.on_conflict_do_update(index_elements=keys, set_={"updated_at": moment})
        else:
            statement = statement.on_conflict_do_nothing(index_elements=keys)
        await bind.execute(statement)
