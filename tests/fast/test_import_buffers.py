"""Imports under way hold their streams' bytes under one bound: one past it is refused with a retry
delay and writes nothing, and every import gives its bytes back, whole or failed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from pioneer_grpc.errors import InvalidArgument, RateLimited
from pioneer_grpc.service import copies, history
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.import_buffers import ImportBuffers
from pioneer_grpc.v1 import history_pb2


async def _export(ctx: ServiceContext) -> bytes:
    await history.create_thread(ctx, "src", history_pb2.ThreadConfig(model="gpt-4o"))
    return b"".join(await copies.export_thread(ctx, "src"))


async def _pieces(
    stream: bytes, held: asyncio.Event | None = None, read: asyncio.Event | None = None
) -> AsyncIterator[bytes]:
    half = len(stream) // 2
    yield stream[:half]
    if read is not None:
        read.set()
    if held is not None:
        await held.wait()
    yield stream[half:]


async def test_an_import_past_the_bound_is_refused_and_the_bytes_come_back(ctx: ServiceContext) -> None:
    stream = await _export(ctx)
    ctx.import_buffers = ImportBuffers(limit=len(stream) + len(stream) // 2 - 1)
    release, half_read = asyncio.Event(), asyncio.Event()
    first = asyncio.create_task(copies.import_thread(ctx, "a", _pieces(stream, release, half_read)))
    await half_read.wait()
    with pytest.raises(RateLimited) as refused:
        await copies.import_thread(ctx, "b", _pieces(stream))
    assert refused.value.retry_delay_seconds > 0
    assert ctx.import_buffers.held == len(stream) // 2  # the refused one gave its half back
    release.set()
    assert (await first).thread.thread_id == "a"
    assert ctx.import_buffers.held == 0
    with pytest.raises(InvalidArgument):
        await copies.import_thread(ctx, "c", _pieces(b"not an export\n"))
    assert ctx.import_buffers.held == 0
    listed = [t.thread_id for t in (await ctx.store.listing.threads(None, 10))[0]]
    assert sorted(listed) == ["a", "src"]
    # With the first one done, the same import fits.
    assert (await copies.import_thread(ctx, "b", _pieces(stream))).thread.thread_id == "b"
