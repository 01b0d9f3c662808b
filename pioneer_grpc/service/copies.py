"""A thread copied: ForkThread, ExportThread and ImportThread as use cases.

Each is one unit of work of the store (store/copies.py): a fork reads its source and
writes the copy in one transaction; an export reads the thread as one snapshot, then
streams it (service/thread_export.py); an import reads the whole stream, checks it, and
only then writes it in one transaction, so a call cancelled or broken before its end
writes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterable, Iterator, Sequence

from pioneer_grpc.caps.history import MAX_IMPORT_BYTES, MAX_IMPORT_CHUNK_BYTES
from pioneer_grpc.errors import Aborted, InvalidArgument, ResourceExhausted
from pioneer_grpc.history.entries import id_violation, thread_id_violation
from pioneer_grpc.service import quotas
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.history import config_with, stored_config_violations
from pioneer_grpc.service.tenancy import thread_key
from pioneer_grpc.service.thread_export import export_lines, import_copy
from pioneer_grpc.store.copy_port import Fork, Written
from pioneer_grpc.store.port import Conflict
from pioneer_grpc.v1 import history_pb2

# A chunk of ExportThread's stream; lines are gathered into chunks up to this size.
EXPORT_CHUNK_BYTES = 1024 * 1024
_FORK_ATTEMPTS = 3


async def fork_thread(
    ctx: ServiceContext,
    source_thread_id: str,
    source_turn_id: str,
    thread_id: str,
    config: history_pb2.ThreadConfig,
    paths: Sequence[str],
) -> Written:
    InvalidArgument.raise_if(
        [
            thread_id_violation(source_thread_id, "source_thread_id"),
            id_violation("source_turn_id", source_turn_id, "source turn id"),
            thread_id_violation(thread_id) if thread_id else None,
        ]
    )
    target = thread_id or f"thr_{uuid.uuid4().hex}"
    await quotas.check_new_thread(ctx, target)
    if quotas.caps_bytes(ctx):
        part = await ctx.store.copies.read(source_thread_id, source_turn_id)
        await quotas.check_stored(ctx, target, [copied.entry for copied in part.entries])
    for _ in range(_FORK_ATTEMPTS):
        current = (await ctx.store.threads.get(source_thread_id)).config
        wanted = current
        if config.ListFields() or paths:
            wanted = config_with(ctx, current, config, paths, "config_mask")
        forked = await ctx.store.copies.fork(Fork(source_thread_id, source_turn_id, target, wanted, current))
        if not isinstance(forked, Conflict):
            ctx.seen_models.put(thread_key(target), forked.thread.config.model)
            return forked
    raise Aborted(
        f"thread {source_thread_id!r} kept changing its config while it was forked; nothing was written:"
        " send it again"
    )


async def export_thread(ctx: ServiceContext, thread_id: str) -> Iterator[bytes]:
    """The thread's export stream in chunks of at most EXPORT_CHUNK_BYTES (a line longer than that
    spans chunks), read as one snapshot before the first chunk is given."""
    InvalidArgument.raise_if([thread_id_violation(thread_id)])
    copy = await ctx.store.copies.read(thread_id)
    return _chunks(export_lines(thread_id, copy))


def _chunks(lines: Iterator[bytes]) -> Iterator[bytes]:
    pending = bytearray()
    for line in lines:
        pending += line
        while len(pending) >= EXPORT_CHUNK_BYTES:
            yield bytes(pending[:EXPORT_CHUNK_BYTES])
            del pending[:EXPORT_CHUNK_BYTES]
    if pending:
        yield bytes(pending)


async def import_thread(ctx: ServiceContext, thread_id: str, chunks: AsyncIterable[bytes]) -> Written:
    """Stores the stream `chunks` carry as thread `thread_id` (else the export's id): nothing until
    the whole stream is read and checked, then one transaction."""
    InvalidArgument.raise_if([thread_id_violation(thread_id) if thread_id else None])
    stream = bytearray()
    try:
        async for chunk in chunks:
            if len(chunk) > MAX_IMPORT_CHUNK_BYTES:
                raise InvalidArgument.field(
                    "chunk", f"at most {MAX_IMPORT_CHUNK_BYTES:,} bytes per message (got {len(chunk):,})"
                )
            if len(stream) + len(chunk) > MAX_IMPORT_BYTES:
                raise ResourceExhausted(
                    f"the import stream is over its cap of {MAX_IMPORT_BYTES:,} bytes; nothing was written"
                )
            ctx.import_buffers.take(len(chunk))
            stream += chunk
        copy, target = import_copy(bytes(stream), thread_id)
    finally:
        ctx.import_buffers.give_back(len(stream))
    InvalidArgument.raise_if(stored_config_violations(copy.config, "header.config"))
    await quotas.check_new_thread(ctx, target)
    await quotas.check_stored(ctx, target, [copied.entry for copied in copy.entries])
    written = await ctx.store.copies.write(target, copy)
    ctx.seen_models.put(thread_key(target), written.thread.config.model)
    return written
