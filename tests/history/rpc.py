"""Calling HistoryService on a test server."""

from __future__ import annotations

import re
from typing import Any

from pioneer_grpc.client import AsyncClient
from pioneer_grpc.v1 import history_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb

# The history tests import the shared builders and decoder from here.
from tests.builders import ASSISTANT, TOOL, USER, entry, tool_call  # noqa: F401
from tests.support import failure  # noqa: F401


def config(
    max_context: int | None = None, reserve: int | None = None, **strings: str
) -> history_pb2.ThreadConfig:
    cfg = history_pb2.ThreadConfig(**strings)
    if max_context is not None:
        cfg.max_context_tokens = max_context
    if reserve is not None:
        cfg.response_reserve_tokens = reserve
    return cfg


def rpc(history: Any, method: str) -> Any:
    """`method` (e.g. "CreateThread") of a raw HistoryService stub or of the Python client, so the history
    tests can move to the client file by file; both take the request message."""
    if isinstance(history, AsyncClient):
        return getattr(history, re.sub(r"(?<!^)(?=[A-Z])", "_", method).lower())
    return getattr(history, method)


async def create(history, thread_id: str, cfg: history_pb2.ThreadConfig | None = None) -> history_pb2.Thread:
    request = pb.CreateThreadRequest(thread_id=thread_id, config=cfg or config())
    return (await rpc(history, "CreateThread")(request)).thread


async def turn(history, thread_id: str, turn_id: str, *entries: history_pb2.ConversationEntry) -> None:
    """Appends a turn's entries and completes it."""
    await rpc(history, "AppendEntries")(pb.AppendEntriesRequest(thread_id=thread_id, entries=entries))
    await rpc(history, "CompleteTurn")(pb.CompleteTurnRequest(thread_id=thread_id, turn_id=turn_id))


async def turn_in_one_call(
    history, thread_id: str, turn_id: str, *entries: history_pb2.ConversationEntry
) -> None:
    """A turn's entries stored and the turn completed by one CompleteTurn, as the example loops end a turn."""
    await rpc(history, "CompleteTurn")(
        pb.CompleteTurnRequest(thread_id=thread_id, turn_id=turn_id, entries=entries)
    )


async def load(
    history, thread_id: str, exclude: str = "", dry_run: bool = False
) -> pb.LoadConversationHistoryResponse:
    return await rpc(history, "LoadConversationHistory")(
        pb.LoadConversationHistoryRequest(thread_id=thread_id, exclude_turn_id=exclude, dry_run=dry_run)
    )


def codes(response: pb.LoadConversationHistoryResponse) -> list[str]:
    return [d.code for d in response.report.diagnostics]
