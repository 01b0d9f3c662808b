"""How a thread or a turn comes to exist implicitly, said once.

An append creates the turns its entries name; recording a manifest creates the
thread (with the default budget) and the turn when a compile names them first.
Both are inserts that tolerate a concurrent creator (ON CONFLICT), on SQLite and
PostgreSQL alike. The functions that take a synchronous Connection run inside one
transaction of a round (store/runner.py), on either database.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from pioneer_grpc.history.budget import DEFAULT_MAX_CONTEXT_TOKENS, DEFAULT_RESPONSE_RESERVE_TOKENS
from pioneer_grpc.store.clock import now
from pioneer_grpc.store.driver import POSTGRESQL, SQLITE, Direct
from pioneer_grpc.store.models import ThreadRow, TurnRow
from pioneer_grpc.store.port import TurnRecord
from pioneer_grpc.v1 import history_pb2


def insert(conn: Connection, model: Any) -> Any:
    """The dialect's INSERT, which has ON CONFLICT."""
    return (postgresql if conn.dialect.name == "postgresql" else sqlite).insert(model)


def _new_thread(conn: Connection, tenant: str, thread_id: str) -> Any:
    moment = now()
    return (
        insert(conn, ThreadRow)
        .values(
            thread_id=thread_id,
            tenant=tenant,
            max_context_tokens=DEFAULT_MAX_CONTEXT_TOKENS,
            response_reserve_tokens=DEFAULT_RESPONSE_RESERVE_TOKENS,
            model="",
            summary_model="",
            created_at=moment,
            updated_at=moment,
        )
        .on_conflict_do_nothing(index_elements=["thread_id", "tenant"])
    )


def ensure_thread_in(conn: Connection, tenant: str, thread_id: str) -> None:
    """Creates the thread with the default budget unless it exists (a manifest recorded on a thread
    no call created)."""
    conn.execute(_new_thread(conn, tenant, thread_id))


def _lock_turn_statement(dialect: Any) -> Any:
    statement = dialect.insert(TurnRow.__table__)
    return statement.on_conflict_do_update(
        index_elements=["thread_id", "turn_id", "tenant"], set_={"updated_at": statement.excluded.updated_at}
    ).returning(TurnRow.status, TurnRow.prompt_manifest_json, TurnRow.manifest_event_id)


# Built once per dialect: building a statement costs more Python than running it, every round.
_TURN_KEYS = ("thread_id", "tenant", "turn_id", "status", "created_at", "updated_at")
_LOCK_TURN_PG = Direct(_lock_turn_statement(postgresql), column_keys=_TURN_KEYS, dialects=(POSTGRESQL,))
_LOCK_TURN_SQLITE = Direct(_lock_turn_statement(sqlite), column_keys=_TURN_KEYS, dialects=(SQLITE,))


def lock_turn(conn: Connection, tenant: str, thread_id: str, turn_id: str) -> TurnRecord:
    """Creates the turn (in progress) unless it exists, and locks its row until the transaction ends.

    An existing row is touched (DO UPDATE rather than DO NOTHING) so that this
    same statement locks it; it returns what the round needs without another read.
    """
    moment = now()
    values = {
        "thread_id": thread_id,
        "tenant": tenant,
        "turn_id": turn_id,
        "status": history_pb2.TURN_STATUS_IN_PROGRESS,
        "created_at": moment,
        "updated_at": moment,
    }
    lock = _LOCK_TURN_PG if conn.dialect.name == "postgresql" else _LOCK_TURN_SQLITE
    row = lock.first(conn, values)
    return TurnRecord(row.status, row.prompt_manifest_json, row.manifest_event_id)
