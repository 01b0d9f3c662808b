"""Entries and tool calls as the tests build them: one builder each.

The agent loop's own shapes (a user's message, a tool round, a reply) come from
the Python client (pioneer_grpc.client: user_entry, assistant_entry,
tool_result_entry, tool_round); these cover what a test needs besides: any role
and field, a turn id, a default text.
"""

from __future__ import annotations

from typing import Any

from pioneer_grpc.v1 import common_pb2, history_pb2

USER = history_pb2.ENTRY_ROLE_USER
ASSISTANT = history_pb2.ENTRY_ROLE_ASSISTANT
TOOL = history_pb2.ENTRY_ROLE_TOOL


def entry(
    entry_id: str, turn: str = "", role: int = USER, content: str = "", **fields: Any
) -> history_pb2.ConversationEntry:
    """An entry of `turn` ("" lets the request's turn name it); its text is "text of <id>" unless given."""
    return history_pb2.ConversationEntry(
        entry_id=entry_id,
        turn_id=turn,
        role=role,  # type: ignore[arg-type]
        content=content or f"text of {entry_id}",
        **fields,
    )


def own_turn(entry_id: str, content: str = "") -> history_pb2.ConversationEntry:
    """A user's entry alone in a turn named after it (turn-<id>): the appends of load and chaos tests."""
    return entry(entry_id, f"turn-{entry_id}", USER, content)


def tool_call(call_id: str, name: str = "read_file", arguments: str = "{}") -> common_pb2.ToolCall:
    return common_pb2.ToolCall(id=call_id, name=name, arguments=arguments)
