"""A tenant's caps from the tenants file: how many threads it holds, and how many bytes of entries.

Checked before a write that would pass them, against what the store holds for the tenant now
(one more read, made only for a tenant with a cap); a write that passes answers
RESOURCE_EXHAUSTED, reason TENANT_QUOTA_EXCEEDED, with a QuotaFailure and the numbers. Two
writes at once may each pass the check and together go over by their own size: the caps
bound what a tenant holds, not to the byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pioneer_grpc import reasons
from pioneer_grpc.errors import NotFound, QuotaExceeded
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.store.entries import entry_values, stored_bytes
from pioneer_grpc.store.port import NewEntry
from pioneer_grpc.tenants import current_caller
from pioneer_grpc.v1 import history_pb2


def _entries_bytes(thread_id: str, entries: Sequence[history_pb2.ConversationEntry]) -> int:
    return sum(
        stored_bytes(entry_values(thread_id, NewEntry(entry, "", 0), "", datetime.min)) for entry in entries
    )


async def check_new_thread(ctx: ServiceContext, thread_id: str) -> None:
    """Refuses a thread the tenant does not hold yet when it holds its max_threads already."""
    tenant = current_caller().tenant
    quota = ctx.quota_of(tenant)
    if quota is None or quota.max_threads is None:
        return
    threads, _ = await ctx.store.threads.tenant_usage()
    if threads < quota.max_threads:
        return
    try:
        await ctx.store.threads.get(thread_id)
        return  # it exists: a retried create, or a write to it
    except NotFound:
        pass
    raise _over_cap(
        tenant,
        "max_threads",
        quota.max_threads,
        threads,
        f"tenant {tenant} holds {threads} threads,",
        f"threads: {threads} held, cap {quota.max_threads}",
    )


def caps_bytes(ctx: ServiceContext) -> bool:
    """Whether the caller's tenant has a max_stored_bytes (a copy reads its entries only then)."""
    quota = ctx.quota_of(current_caller().tenant)
    return quota is not None and quota.max_stored_bytes is not None


async def check_stored(
    ctx: ServiceContext, thread_id: str, entries: Sequence[history_pb2.ConversationEntry]
) -> None:
    """Refuses entries that would take the tenant past its max_stored_bytes (a repeat of stored
    entries counts as new: at the cap, resend nothing)."""
    tenant = current_caller().tenant
    quota = ctx.quota_of(tenant)
    if quota is None or quota.max_stored_bytes is None or not entries:
        return
    adding = _entries_bytes(thread_id, entries)
    _, held = await ctx.store.threads.tenant_usage()
    if held + adding <= quota.max_stored_bytes:
        return
    raise _over_cap(
        tenant,
        "max_stored_bytes",
        quota.max_stored_bytes,
        held,
        f"tenant {tenant} holds {held} bytes of entries and these add {adding};",
        f"stored bytes: {held} held, {adding} more asked, cap {quota.max_stored_bytes}",
        requested=adding,
    )


def _over_cap(
    tenant: str, name: str, limit: int, used: int, holds: str, description: str, requested: int | None = None
) -> QuotaExceeded:
    """RESOURCE_EXHAUSTED for the tenant's cap `name` (QuotaFailure and metadata with the numbers)."""
    metadata = {"tenant": tenant, "quota": name, "limit": str(limit), "used": str(used)}
    if requested is not None:
        metadata["requested"] = str(requested)
    return QuotaExceeded(
        f"{holds} its cap ({name}, tenants file) is {limit}: delete threads, or raise the cap",
        subject=f"tenant:{tenant}",
        description=description,
        reason=reasons.TENANT_QUOTA_EXCEEDED,
        metadata=metadata,
    )
