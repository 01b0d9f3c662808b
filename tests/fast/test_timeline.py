"""ListThreadTimeline: a thread's reported rounds in a page of up to 1,000, oldest first, numbered,
breaks only on request, with totals; its page tokens bound to the thread and the filter."""

from __future__ import annotations

import pytest

from pioneer_grpc import reasons
from pioneer_grpc.errors import InvalidArgument, NotFound
from pioneer_grpc.service import round_usage
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.v1 import manifest_service_pb2
from tests.store.test_timeline import CAUSES, _seed


async def test_list_thread_timeline_pages_and_filters(ctx: ServiceContext) -> None:
    await _seed(ctx.store)
    request = manifest_service_pb2.ListThreadTimelineRequest
    whole = await round_usage.list_timeline(ctx, request(thread_id="long"))
    assert (len(whole.rounds), whole.next_page_token, whole.total_rounds, whole.total_breaks) == (
        30,
        "",
        30,
        6,
    )
    fifth = whole.rounds[4]
    assert (fifth.round, fifth.usage.turn_id, fifth.usage.prefix_break.cause) == (5, "turn-5", CAUSES[2])
    assert (
        list(fifth.usage.prefix_break.entry_ids) == ["e1", "e2"]
        and fifth.usage.prefix_break.entry_count == 20
    )
    assert (
        fifth.usage.expected_cache_read_input_tokens == 0
        and fifth.usage.reported.cache_read_input_tokens == 900
    )
    breaks, token = [], ""
    while True:
        page = await round_usage.list_timeline(
            ctx, request(thread_id="long", breaks_only=True, page_size=4, page_token=token)
        )
        breaks += [r.round for r in page.rounds]
        token = page.next_page_token
        if not token:
            break
    assert breaks == [5, 10, 15, 20, 25, 30]
    with pytest.raises(InvalidArgument) as refused:  # a token of the unfiltered list
        first = await round_usage.list_timeline(ctx, request(thread_id="long", page_size=2))
        await round_usage.list_timeline(
            ctx, request(thread_id="long", breaks_only=True, page_token=first.next_page_token)
        )
    assert refused.value.reason == reasons.INVALID_PAGE_TOKEN
    with pytest.raises(InvalidArgument):
        await round_usage.list_timeline(ctx, request(thread_id="long", page_size=1001))
    with pytest.raises(NotFound):
        await round_usage.list_timeline(ctx, request(thread_id="none"))
