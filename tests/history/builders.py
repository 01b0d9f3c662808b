"""Entries and snapshots for the pure-core tests."""

from __future__ import annotations

from pioneer_grpc.history.budget import Budget
from pioneer_grpc.history.decide import Snapshot, StoredSummary
from pioneer_grpc.v1 import common_pb2, history_pb2

USER = history_pb2.ENTRY_ROLE_USER
ASSISTANT = history_pb2.ENTRY_ROLE_ASSISTANT
TOOL = history_pb2.ENTRY_ROLE_TOOL


def entry(
    entry_id: str,
    role: int = USER,
    tokens: int = 10,
    content: str | None = None,
    calls: tuple[str, ...] = (),
    answers: str = "",
    turn: str = "t",
    sequence: int = 0,
) -> history_pb2.ConversationEntry:
    return history_pb2.ConversationEntry(
        entry_id=entry_id,
        turn_id=turn,
        role=role,  # type: ignore[arg-type]
        content=content if content is not None else f"text of {entry_id}",
        tool_calls=[common_pb2.ToolCall(id=c, name="read_file", arguments="{}") for c in calls],
        tool_call_id=answers,
        token_count=tokens,
        sequence=sequence,
        completed=True,
    )


def snapshot(
    entries: list[history_pb2.ConversationEntry], budget: int, summary: StoredSummary | None = None
) -> Snapshot:
    for i, e in enumerate(entries, start=1):
        if not e.sequence:
            e.sequence = i
    return Snapshot(budget=Budget(budget), summary=summary, entries=tuple(entries), model="m")


def summary(tokens: int, text: str = "earlier", covers: str = "e0") -> StoredSummary:
    return StoredSummary(
        text=text, token_count=tokens, covers_through_entry_id=covers, covers_through_sequence=0
    )
