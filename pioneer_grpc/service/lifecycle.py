"""A thread's end and a turn's: DeleteThread and AbandonTurn as use cases.

Both are one unit of work of the store (store/lifecycle.py). What this server keeps of a
deleted thread is forgotten here; every other worker's and replica's kept history stops
serving it because the history state a load reads first carries the thread's creation time
(store/port.py HistoryState.created_at): a thread created again under the same id is another
state. An abandoned turn needs nothing forgotten: its entries were never completed, and kept
answers hold completed entries only.
"""

from __future__ import annotations

from dataclasses import dataclass

from pioneer_grpc import reasons
from pioneer_grpc.errors import InvalidArgument, NotFound
from pioneer_grpc.history.entries import id_violation, thread_id_violation
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.tenancy import thread_key


@dataclass(frozen=True)
class Abandoned:
    # False: the turn did not exist (allow_missing).
    abandoned: bool
    dropped_entry_count: int


async def abandon_turn(
    ctx: ServiceContext, thread_id: str, turn_id: str, allow_missing: bool = False
) -> Abandoned:
    InvalidArgument.raise_if([thread_id_violation(thread_id), id_violation("turn_id", turn_id, "turn_id")])
    dropped = await ctx.store.turns.abandon(thread_id, turn_id, allow_missing)
    ctx.recent_rounds.forget(thread_key(thread_id), turn_id)
    return Abandoned(dropped is not None, dropped or 0)


async def delete_thread(ctx: ServiceContext, thread_id: str, allow_missing: bool = False) -> bool:
    """Whether the thread existed; NotFound when it did not, unless `allow_missing`."""
    InvalidArgument.raise_if([thread_id_violation(thread_id)])
    deleted = await ctx.store.threads.delete(thread_id)
    key = thread_key(thread_id)
    ctx.load_cache.forget(key)
    ctx.seen_models.forget(key)
    ctx.round_prefixes.forget(key)
    ctx.recent_rounds.forget(key)
    ctx.kept_texts.forget(key)
    if deleted:
        ctx.hub.end_thread(*key)
    elif not allow_missing:
        raise NotFound(
            f"thread {thread_id!r} does not exist (deleted already?); send allow_missing to accept that",
            reason=reasons.THREAD_NOT_FOUND,
            metadata={"thread_id": thread_id},
        )
    return deleted
