"""Tool-pair grouping: the smallest runs of entries a cut may keep or drop.

An assistant entry that calls tools and the tool results that follow it and
answer those calls form one unit; every other entry is a unit alone. A tool
result that does not follow its call (its call was summarized away, or is older
than the loaded window) is an orphan: providers reject it, so it is never sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pioneer_grpc.history.tokens import MESSAGE_OVERHEAD
from pioneer_grpc.v1 import history_pb2


@dataclass(frozen=True)
class Unit:
    entries: tuple[history_pb2.ConversationEntry, ...]
    orphan: bool = False

    @property
    def tokens(self) -> int:
        return sum(e.token_count + MESSAGE_OVERHEAD for e in self.entries)

    @property
    def is_tool_pair(self) -> bool:
        return len(self.entries) > 1


def group_units(entries: Sequence[history_pb2.ConversationEntry]) -> list[Unit]:
    units: list[Unit] = []
    i = 0
    while i < len(entries):
        entry = entries[i]
        if entry.role == history_pb2.ENTRY_ROLE_ASSISTANT and entry.tool_calls:
            call_ids = {call.id for call in entry.tool_calls}
            end = i + 1
            while (
                end < len(entries)
                and entries[end].role == history_pb2.ENTRY_ROLE_TOOL
                and entries[end].tool_call_id in call_ids
            ):
                end += 1
            units.append(Unit(tuple(entries[i:end])))
            i = end
        else:
            units.append(Unit((entry,), orphan=entry.role == history_pb2.ENTRY_ROLE_TOOL))
            i += 1
    return units
