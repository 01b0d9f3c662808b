"""ListThreads, ListTurns and ListEntries page as AIP-158 says, without gaps or repeats, on both backends."""

from __future__ import annotations

import grpc
from sqlalchemy import select, update

from pioneer_grpc import reasons
from pioneer_grpc.store.models import ThreadRow
from pioneer_grpc.v1 import history_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb
from tests.history.rpc import create, entry, failure


async def _all_pages(call, request, field: str) -> tuple[list, int]:
    items, pages = [], 0
    while True:
        response = await call(request)
        pages += 1
        items.extend(getattr(response, field))
        if not response.next_page_token:
            return items, pages
        request.page_token = response.next_page_token


async def test_a_thousand_entries_page_without_gaps_or_repeats(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    for batch in range(10):
        await history.append_entries(
            pb.AppendEntriesRequest(
                thread_id="t",
                entries=[entry(f"e{batch * 100 + i:04d}", f"u{batch}") for i in range(100)],
            )
        )
    entries, pages = await _all_pages(
        history.list_entries, pb.ListEntriesRequest(thread_id="t", page_size=137), "entries"
    )
    assert [e.entry_id for e in entries] == [f"e{i:04d}" for i in range(1000)]
    assert pages == 8
    sequences = [e.sequence for e in entries]
    assert sequences == sorted(set(sequences))
    # The default page is 100; more than the maximum is the maximum (500).
    assert len((await history.list_entries(pb.ListEntriesRequest(thread_id="t"))).entries) == 100
    assert (
        len((await history.list_entries(pb.ListEntriesRequest(thread_id="t", page_size=10_000))).entries)
        == 500
    )
    one_turn, _ = await _all_pages(
        history.list_entries, pb.ListEntriesRequest(thread_id="t", turn_id="u3", page_size=30), "entries"
    )
    assert [e.entry_id for e in one_turn] == [f"e{300 + i:04d}" for i in range(100)]
    turns, turn_pages = await _all_pages(
        history.list_turns, pb.ListTurnsRequest(thread_id="t", page_size=3), "turns"
    )
    assert [t.turn_id for t in turns] == [f"u{i}" for i in range(10)]
    assert turn_pages == 4
    assert {(t.entry_count, t.status) for t in turns} == {(100, history_pb2.TURN_STATUS_IN_PROGRESS)}


async def test_threads_page_by_id(pg_server):
    history = await pg_server.client()
    for i in range(25):
        await create(history, f"t{i:02d}")
    await history.append_entries(pb.AppendEntriesRequest(thread_id="t07", entries=[entry("e", "u")]))
    threads, pages = await _all_pages(history.list_threads, pb.ListThreadsRequest(page_size=10), "threads")
    assert [t.thread_id for t in threads] == [f"t{i:02d}" for i in range(25)]
    assert pages == 3
    assert [t.entry_count for t in threads if t.entry_count] == [1]


async def test_threads_newest_first_page_through_ties(pg_server):
    """Newest first by (creation time, id): threads created at the same moment come by id, none lost."""
    history = await pg_server.client()
    for i in range(9):
        await create(history, f"t{i}")
    # t2..t6 share one creation time (as threads created within the clock's resolution would).
    async with pg_server.ctx.store.sessions() as session, session.begin():
        moment = await session.scalar(select(ThreadRow.created_at).where(ThreadRow.thread_id == "t4"))
        tied = ThreadRow.thread_id.in_([f"t{i}" for i in range(2, 7)])
        await session.execute(update(ThreadRow).where(tied).values(created_at=moment))
    request = pb.ListThreadsRequest(page_size=2, order_by="create_time desc")
    threads, pages = await _all_pages(history.list_threads, request, "threads")
    assert [t.thread_id for t in threads] == ["t8", "t7", "t6", "t5", "t4", "t3", "t2", "t1", "t0"]
    assert pages == 5


async def test_bad_page_requests_are_invalid_argument(pg_server):
    history = await pg_server.client()
    await create(history, "a")
    await create(history, "b")
    negative = await failure(history.list_threads(pb.ListThreadsRequest(page_size=-1)))
    assert negative.code == grpc.StatusCode.INVALID_ARGUMENT
    assert negative.violations == [("page_size", "must not be negative")]
    first = await history.list_threads(pb.ListThreadsRequest(page_size=1))
    foreign = await failure(
        history.list_entries(pb.ListEntriesRequest(thread_id="a", page_token=first.next_page_token))
    )
    assert (foreign.code, foreign.reason) == (grpc.StatusCode.INVALID_ARGUMENT, reasons.INVALID_PAGE_TOKEN)
    garbage = await failure(history.list_threads(pb.ListThreadsRequest(page_token="not a token")))
    assert garbage.reason == reasons.INVALID_PAGE_TOKEN
    assert garbage.violations[0][0] == "page_token"
    missing = await failure(history.list_turns(pb.ListTurnsRequest(thread_id="nope")))
    assert (missing.code, missing.reason) == (grpc.StatusCode.NOT_FOUND, reasons.THREAD_NOT_FOUND)
