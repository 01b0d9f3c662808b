"""HistoryService: converts requests and delegates to service/history.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc

from pioneer_grpc import wire
from pioneer_grpc.caps import text_violation
from pioneer_grpc.caps.table import CAPS
from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.service import copies, lifecycle, listing
from pioneer_grpc.service import history as history_ops
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.load_cache import CachedLoad
from pioneer_grpc.v1 import history_pb2, history_service_pb2_grpc
from pioneer_grpc.v1 import history_service_pb2 as pb

MESSAGES_FIELD = pb.LoadConversationHistoryResponse.DESCRIPTOR.fields_by_name["messages"].number
ENTRIES_FIELD = pb.AppendEntriesResponse.DESCRIPTOR.fields_by_name["entries"].number
MODEL_OWNER = pb.CountTokensRequest.DESCRIPTOR.full_name


def _encoded_append(head: pb.AppendEntriesResponse, entries: list[history_pb2.ConversationEntry]) -> bytes:
    """The response as bytes (pioneer_grpc/wire.py), an entry at a time: the entries of an append at
    its caps are megabytes, which one call would encode holding the GIL throughout."""
    encoded = (entry.SerializeToString() for entry in entries)
    return head.SerializeToString() + wire.repeated_records(ENTRIES_FIELD, encoded)


class HistoryServicer(history_service_pb2_grpc.HistoryServiceServicer):
    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx

    async def CreateThread(
        self, request: pb.CreateThreadRequest, context: grpc.aio.ServicerContext
    ) -> pb.CreateThreadResponse:
        thread = await history_ops.create_thread(self.ctx, request.thread_id, request.config)
        return pb.CreateThreadResponse(thread=thread)

    async def GetThread(
        self, request: pb.GetThreadRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetThreadResponse:
        return pb.GetThreadResponse(thread=await history_ops.get_thread(self.ctx, request.thread_id))

    async def UpdateThread(
        self, request: pb.UpdateThreadRequest, context: grpc.aio.ServicerContext
    ) -> pb.UpdateThreadResponse:
        thread = await history_ops.update_thread(
            self.ctx, request.thread_id, request.config, list(request.update_mask.paths)
        )
        return pb.UpdateThreadResponse(thread=thread)

    async def AppendEntries(
        self, request: pb.AppendEntriesRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        outcome = await history_ops.append_entries(
            self.ctx, request.thread_id, list(request.entries), with_entries=not request.counts_only
        )
        head = pb.AppendEntriesResponse(
            created_count=outcome.created_count, existing_count=outcome.existing_count
        )
        if sum(entry.ByteSize() for entry in outcome.entries) <= wire.PIECE_BYTES:
            return _encoded_append(head, outcome.entries)
        return await asyncio.to_thread(_encoded_append, head, outcome.entries)

    async def CompleteTurn(
        self, request: pb.CompleteTurnRequest, context: grpc.aio.ServicerContext
    ) -> pb.CompleteTurnResponse:
        outcome = await history_ops.complete_turn(
            self.ctx,
            request.thread_id,
            request.turn_id,
            list(request.entries),
            request.previous_round_usage if request.HasField("previous_round_usage") else None,
        )
        return pb.CompleteTurnResponse(
            completed_entry_count=outcome.completed_entry_count,
            created_count=outcome.created_count,
            existing_count=outcome.existing_count,
        )

    async def AbandonTurn(
        self, request: pb.AbandonTurnRequest, context: grpc.aio.ServicerContext
    ) -> pb.AbandonTurnResponse:
        outcome = await lifecycle.abandon_turn(
            self.ctx, request.thread_id, request.turn_id, request.allow_missing
        )
        return pb.AbandonTurnResponse(
            abandoned=outcome.abandoned, dropped_entry_count=outcome.dropped_entry_count
        )

    async def DeleteThread(
        self, request: pb.DeleteThreadRequest, context: grpc.aio.ServicerContext
    ) -> pb.DeleteThreadResponse:
        deleted = await lifecycle.delete_thread(
            self.ctx, request.thread_id, request.allow_missing, request.etag
        )
        return pb.DeleteThreadResponse(deleted=deleted)

    async def ForkThread(
        self, request: pb.ForkThreadRequest, context: grpc.aio.ServicerContext
    ) -> pb.ForkThreadResponse:
        forked = await copies.fork_thread(
            self.ctx,
            request.source_thread_id,
            request.source_turn_id,
            request.thread_id,
            request.config,
            list(request.config_mask.paths),
        )
        return pb.ForkThreadResponse(
            thread=forked.thread, turn_count=forked.turn_count, summary_count=forked.summary_count
        )

    async def ExportThread(
        self, request: pb.ExportThreadRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.ExportThreadResponse]:
        for chunk in await copies.export_thread(self.ctx, request.thread_id):
            yield pb.ExportThreadResponse(chunk=chunk)

    async def ImportThread(
        self, requests: AsyncIterator[pb.ImportThreadRequest], context: grpc.aio.ServicerContext
    ) -> pb.ImportThreadResponse:
        first = await anext(requests, None)
        thread_id = first.thread_id if first is not None else ""

        async def chunks() -> AsyncIterator[bytes]:
            if first is not None:
                yield first.chunk
            async for request in requests:
                yield request.chunk

        imported = await copies.import_thread(self.ctx, thread_id, chunks())
        return pb.ImportThreadResponse(
            thread=imported.thread, turn_count=imported.turn_count, summary_count=imported.summary_count
        )

    async def LoadConversationHistory(
        self, request: pb.LoadConversationHistoryRequest, context: grpc.aio.ServicerContext
    ) -> bytes | pb.LoadConversationHistoryResponse:
        """A shared full load is answered as bytes: its messages were encoded once (pioneer_grpc/wire.py)."""
        answer = await history_ops.load_history_result(
            self.ctx, request.thread_id, request.exclude_turn_id, request.dry_run
        )
        result = answer.result
        if isinstance(result, CachedLoad):
            head = pb.LoadConversationHistoryResponse(report=result.result.report)
            head.report.diagnostics.extend(answer.left_out)
            return b"".join([head.SerializeToString(), *result.framed_parts(MESSAGES_FIELD)])
        response = pb.LoadConversationHistoryResponse(messages=result.messages, report=result.report)
        response.report.diagnostics.extend(answer.left_out)
        return response

    async def GetThreadSummary(
        self, request: pb.GetThreadSummaryRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetThreadSummaryResponse:
        summary = await history_ops.get_summary(self.ctx, request.thread_id)
        if summary is None:
            return pb.GetThreadSummaryResponse()
        return pb.GetThreadSummaryResponse(summary=summary)

    async def CountTokens(
        self, request: pb.CountTokensRequest, context: grpc.aio.ServicerContext
    ) -> pb.CountTokensResponse:
        # texts and messages are checked by the use case; the model before it names a URL or a tokenizer.
        InvalidArgument.raise_if([text_violation("model", request.model, CAPS[MODEL_OWNER]["model"])])
        counted = await history_ops.count_tokens_of(
            self.ctx, list(request.texts), list(request.messages), request.model
        )
        return pb.CountTokensResponse(
            token_counts=counted.counts,
            total_tokens=sum(counted.counts),
            tokenizer=counted.tokenizer,
            exact=counted.exact,
            fallback_reason=counted.fallback_reason,
        )

    async def ListThreads(
        self, request: pb.ListThreadsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListThreadsResponse:
        threads, token = await listing.list_threads(self.ctx, request)
        return pb.ListThreadsResponse(threads=threads, next_page_token=token)

    async def ListTurns(
        self, request: pb.ListTurnsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListTurnsResponse:
        turns, token = await listing.list_turns(self.ctx, request)
        return pb.ListTurnsResponse(turns=turns, next_page_token=token)

    async def ListEntries(
        self, request: pb.ListEntriesRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListEntriesResponse:
        entries, token = await listing.list_entries(self.ctx, request)
        return pb.ListEntriesResponse(entries=entries, next_page_token=token)
