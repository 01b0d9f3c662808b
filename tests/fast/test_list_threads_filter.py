"""ListThreads with a filter: INVALID_ARGUMENT naming `filter` for one it cannot read, and a page
token bound to the filter it was made with."""

from __future__ import annotations

import pytest

from pioneer_grpc import reasons
from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.listing import list_threads
from pioneer_grpc.v1 import history_service_pb2
from tests.store.contract.rows import config

Request = history_service_pb2.ListThreadsRequest


async def test_a_bad_filter_names_the_field_and_a_token_is_bound_to_its_filter(ctx: ServiceContext) -> None:
    for i in range(5):
        await ctx.store.threads.create(f"t-{i}", config())
    with pytest.raises(InvalidArgument) as refused:
        await list_threads(ctx, Request(filter="colour = red", order_by="update_time  desc"))
    assert [(v.field, v.description) for v in refused.value.violations] == [
        ("filter", "unknown field 'colour': the filter knows thread_id, model, has_cache_breaks, update_time")
    ]
    with pytest.raises(InvalidArgument) as refused:
        await list_threads(ctx, Request(order_by="update_time asc"))
    assert [v.field for v in refused.value.violations] == ["order_by"]
    threads, token = await list_threads(ctx, Request(filter="t-", order_by="update_time desc", page_size=2))
    assert [t.thread_id for t in threads] == ["t-4", "t-3"] and token
    with pytest.raises(InvalidArgument) as refused:
        await list_threads(ctx, Request(filter="t-1", order_by="update_time desc", page_token=token))
    assert refused.value.reason == reasons.INVALID_PAGE_TOKEN
    rest, token = await list_threads(ctx, Request(filter="t-", order_by="update_time desc", page_token=token))
    assert [t.thread_id for t in rest] == ["t-2", "t-1", "t-0"] and not token
    found, _ = await list_threads(ctx, Request(filter="t-3"))
    assert [t.thread_id for t in found] == ["t-3"]
