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
from pioneer_grpc.caps import text_violation
from pioneer_grpc.caps.table import CAPS
from pioneer_grpc.errors import FieldViolation, InvalidArgument, NotFound
from pioneer_grpc.history.entries import id_violation, thread_id_violation
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.tenancy import ThreadKey, thread_key
from pioneer_grpc.store.port import Expiry, Removed


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


async def delete_thread(
    ctx: ServiceContext, thread_id: str, allow_missing: bool = False, etag: str = ""
) -> bool:
    """Whether the thread existed; NotFound when it did not, unless `allow_missing`. With `etag`
    (Thread.etag) only the thread as it was read: Aborted ETAG_MISMATCH when it changed since."""
    InvalidArgument.raise_if([thread_id_violation(thread_id), _etag_violation(etag)])
    deleted = await removed(ctx, thread_key(thread_id), etag=etag) is not None
    if not deleted and not allow_missing:
        raise NotFound(
            f"thread {thread_id!r} does not exist (deleted already?); send allow_missing to accept that",
            reason=reasons.THREAD_NOT_FOUND,
            metadata={"thread_id": thread_id},
        )
    return deleted


async def removed(
    ctx: ServiceContext, key: ThreadKey, *, etag: str = "", expiry: Expiry | None = None
) -> Removed | None:
    """The one path of a thread's deletion, DeleteThread's and the retention sweeper's: the store's
    unit of work in the thread's tenant's view, then what this server keeps of the thread forgotten
    and its watchers ended. `key`: (tenant, thread id)."""
    tenant, thread_id = key
    gone = await ctx.root_store.of_tenant(tenant).threads.delete(thread_id, etag=etag, expiry=expiry)
    ctx.load_cache.forget(key)
    ctx.seen_models.forget(key)
    ctx.round_prefixes.forget(key)
    ctx.recent_rounds.forget(key)
    ctx.kept_texts.forget(key)
    if gone is not None:
        ctx.hub.end_thread(*key)
    return gone


def _etag_violation(etag: str) -> FieldViolation | None:
    return text_violation("etag", etag, CAPS["pioneer.v1.DeleteThreadRequest"]["etag"])
