"""List use cases: threads, a thread's turns, a thread's entries, a page at a time (AIP-158).

threads, next_token = await list_threads(ctx, ListThreadsRequest(page_size=100))
"""

from __future__ import annotations

from datetime import UTC, datetime

from pioneer_grpc.caps import violations_of
from pioneer_grpc.errors import FieldViolation, InvalidArgument
from pioneer_grpc.history.entries import thread_id_violation
from pioneer_grpc.service import thread_filter
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.paging import PageSize, decode_token, encode_token
from pioneer_grpc.service.tenancy import sees_every_tenant
from pioneer_grpc.store.port import ThreadFilter
from pioneer_grpc.tenants import current_caller
from pioneer_grpc.v1 import history_pb2, history_service_pb2

THREAD_PAGE = PageSize(default=50, maximum=1000)
TURN_PAGE = PageSize(default=50, maximum=1000)
ENTRY_PAGE = PageSize(default=100, maximum=500)


# ListThreadsRequest.order_by values besides the default (by thread_id).
NEWEST_FIRST = "create_time desc"
RECENTLY_UPDATED = "update_time desc"


def _order(order_by: str) -> tuple[str, FieldViolation | None]:
    spaced = " ".join(order_by.split())
    if spaced in ("", NEWEST_FIRST, RECENTLY_UPDATED):
        return spaced, None
    return "", FieldViolation(
        "order_by", f'must be empty (by thread_id), "{NEWEST_FIRST}" or "{RECENTLY_UPDATED}"'
    )


async def list_threads(
    ctx: ServiceContext, request: history_service_pb2.ListThreadsRequest
) -> tuple[list[history_pb2.Thread], str]:
    order, bad_order = _order(request.order_by)
    where, bad_filter = thread_filter.violation(request.filter)
    InvalidArgument.raise_if([*violations_of(request), bad_order, bad_filter])
    page_size, page_token = request.page_size, request.page_token
    size = THREAD_PAGE.of(page_size)
    # A token is bound to the order and the filter it was made with.
    bound = f":{request.filter}" if where is not None else ""
    if order:
        return await _threads_by_time(ctx, order, size, page_token, where, bound)
    scope = "threads" + bound
    after = decode_token(page_token, scope)
    position = None if after is None else (str(after[0]), _tenant_of(after, 1))
    threads, more = await ctx.store.listing.threads(
        position, size, every_tenant=sees_every_tenant(), where=where
    )
    return threads, encode_token(scope, [threads[-1].thread_id, threads[-1].tenant]) if more else ""


def _tenant_of(after: list[object], index: int) -> str:
    """The tenant a page token names at `index` (a token made before tenants names none: the caller's)."""
    return str(after[index]) if len(after) > index else current_caller().tenant


async def _threads_by_time(
    ctx: ServiceContext, order: str, size: int, page_token: str, where: ThreadFilter | None, bound: str
) -> tuple[list[history_pb2.Thread], str]:
    newest = order == NEWEST_FIRST
    scope = ("threads:newest" if newest else "threads:updated") + bound
    after = decode_token(page_token, scope)
    position = None
    if after is not None:
        position = (datetime.fromisoformat(str(after[0])), str(after[1]), _tenant_of(after, 2))
    threads, more = await ctx.store.listing.threads_by_time(
        "created" if newest else "updated", position, size, every_tenant=sees_every_tenant(), where=where
    )
    if not more:
        return threads, ""
    last = threads[-1]
    moment = (last.create_time if newest else last.update_time).ToDatetime(tzinfo=UTC).isoformat()
    return threads, encode_token(scope, [moment, last.thread_id, last.tenant])


async def list_turns(
    ctx: ServiceContext, request: history_service_pb2.ListTurnsRequest
) -> tuple[list[history_pb2.Turn], str]:
    thread_id, page_size, page_token = request.thread_id, request.page_size, request.page_token
    InvalidArgument.raise_if([thread_id_violation(thread_id), *violations_of(request)])
    size = TURN_PAGE.of(page_size)
    scope = f"turns:{thread_id}"
    after = decode_token(page_token, scope)
    position = None if after is None else (datetime.fromisoformat(str(after[0])), str(after[1]))
    turns, more = await ctx.store.listing.turns(thread_id, position, size)
    if not more:
        return turns, ""
    last = turns[-1]
    return turns, encode_token(scope, [last.create_time.ToDatetime(tzinfo=UTC).isoformat(), last.turn_id])


async def list_entries(
    ctx: ServiceContext, request: history_service_pb2.ListEntriesRequest
) -> tuple[list[history_pb2.ConversationEntry], str]:
    thread_id, turn_id = request.thread_id, request.turn_id
    page_size, page_token = request.page_size, request.page_token
    InvalidArgument.raise_if([thread_id_violation(thread_id), *violations_of(request)])
    size = ENTRY_PAGE.of(page_size)
    scope = f"entries:{thread_id}:{turn_id}"
    after = decode_token(page_token, scope)
    entries, more = await ctx.store.listing.entries(
        thread_id, turn_id, 0 if after is None else int(after[0]), size
    )
    return entries, encode_token(scope, [entries[-1].sequence]) if more else ""
