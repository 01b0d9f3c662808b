"""Builders for the shapes an agent loop sends over and over.

tools = [tool("read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})]
round_ = tool_round("r1", [ToolCall(id="c1", name="read_file", arguments='{"path":"a"}')], {"c1": "..."})
chat_role(ENTRY_ROLE_USER) == CHAT_ROLE_USER     # the enums number their roles differently
role_name(entry) == "ENTRY_ROLE_USER"            # protobuf enums are ints; this names them
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from google.protobuf import struct_pb2

from pioneer_grpc.v1 import chat_pb2, common_pb2, history_pb2, manifest_service_pb2, prompt_pb2

# Two role enums, one per layer, numbered differently (ENTRY_ROLE_USER is 1, CHAT_ROLE_USER is 2):
# EntryRole is the author of a stored ConversationEntry (what AppendEntries and
# PrepareTurn.new_entries take, what ListEntries returns); ChatRole is the author of a
# ChatMessage in a ChatRequest (what LoadConversationHistory and PrepareTurn return and
# RenderChatRequest takes). Convert with chat_role / entry_role, never by number.
_ENTRY_TO_CHAT: dict[int, chat_pb2.ChatRole] = {
    history_pb2.ENTRY_ROLE_UNSPECIFIED: chat_pb2.CHAT_ROLE_UNSPECIFIED,
    history_pb2.ENTRY_ROLE_USER: chat_pb2.CHAT_ROLE_USER,
    history_pb2.ENTRY_ROLE_ASSISTANT: chat_pb2.CHAT_ROLE_ASSISTANT,
    history_pb2.ENTRY_ROLE_TOOL: chat_pb2.CHAT_ROLE_TOOL,
    history_pb2.ENTRY_ROLE_SYSTEM: chat_pb2.CHAT_ROLE_SYSTEM,
}
_CHAT_TO_ENTRY: dict[int, history_pb2.EntryRole] = {
    chat_pb2.CHAT_ROLE_UNSPECIFIED: history_pb2.ENTRY_ROLE_UNSPECIFIED,
    chat_pb2.CHAT_ROLE_USER: history_pb2.ENTRY_ROLE_USER,
    chat_pb2.CHAT_ROLE_ASSISTANT: history_pb2.ENTRY_ROLE_ASSISTANT,
    chat_pb2.CHAT_ROLE_TOOL: history_pb2.ENTRY_ROLE_TOOL,
    chat_pb2.CHAT_ROLE_SYSTEM: history_pb2.ENTRY_ROLE_SYSTEM,
}


def _names(enum: Any) -> str:
    return ", ".join(f"{name} ({number})" for name, number in enum.items())


def chat_role(entry_role: int) -> chat_pb2.ChatRole:
    """The ChatRole of an EntryRole value (ENTRY_ROLE_USER -> CHAT_ROLE_USER)."""
    try:
        return _ENTRY_TO_CHAT[entry_role]
    except KeyError:
        raise ValueError(f"unknown EntryRole {entry_role}: one of {_names(history_pb2.EntryRole)}") from None


def entry_role(chat_role_value: int) -> history_pb2.EntryRole:
    """The EntryRole of a ChatRole value (CHAT_ROLE_USER -> ENTRY_ROLE_USER)."""
    try:
        return _CHAT_TO_ENTRY[chat_role_value]
    except KeyError:
        raise ValueError(f"unknown ChatRole {chat_role_value}: one of {_names(chat_pb2.ChatRole)}") from None


def role_name(message: history_pb2.ConversationEntry | chat_pb2.ChatMessage) -> str:
    """The role of an entry or a chat message as its enum name ("ENTRY_ROLE_USER", "CHAT_ROLE_TOOL")."""
    if isinstance(message, history_pb2.ConversationEntry):
        return history_pb2.EntryRole.Name(message.role)
    return chat_pb2.ChatRole.Name(message.role)


def json_struct(value: Mapping[str, Any]) -> struct_pb2.Struct:
    """A JSON object (nested dicts, lists, strings, numbers, bools, None) as google.protobuf.Struct."""
    if not isinstance(value, Mapping):
        raise TypeError(f"a JSON schema is an object, got {type(value).__name__}")
    struct = struct_pb2.Struct()
    struct.update(value)
    return struct


def tool(name: str, description: str, parameters: Mapping[str, Any] | None = None) -> chat_pb2.ToolDefinition:
    """A ToolDefinition from a JSON schema dict (an empty object schema when omitted)."""
    schema = parameters if parameters is not None else {"type": "object", "properties": {}}
    return chat_pb2.ToolDefinition(name=name, description=description, parameters=json_struct(schema))


def image_part(data: bytes, mime_type: str = "image/png") -> chat_pb2.ContentPart:
    """An inline image for an entry's content_parts (a screenshot a tool took, a photo a user sent)."""
    return chat_pb2.ContentPart(image=chat_pb2.MediaPart(mime_type=mime_type, data=data))


def user_entry(
    entry_id: str, content: str, turn_id: str = "", parts: Sequence[chat_pb2.ContentPart] = ()
) -> history_pb2.ConversationEntry:
    return history_pb2.ConversationEntry(
        entry_id=entry_id,
        turn_id=turn_id,
        role=history_pb2.ENTRY_ROLE_USER,
        content=content,
        content_parts=list(parts),
    )


def assistant_entry(
    entry_id: str, content: str = "", tool_calls: Sequence[common_pb2.ToolCall] = (), turn_id: str = ""
) -> history_pb2.ConversationEntry:
    return history_pb2.ConversationEntry(
        entry_id=entry_id,
        turn_id=turn_id,
        role=history_pb2.ENTRY_ROLE_ASSISTANT,
        content=content,
        tool_calls=list(tool_calls),
    )


def tool_result_entry(
    entry_id: str,
    call: common_pb2.ToolCall,
    content: str,
    turn_id: str = "",
    parts: Sequence[chat_pb2.ContentPart] = (),
) -> history_pb2.ConversationEntry:
    """The result of `call`; `parts` carry what the tool returned besides text (a screenshot)."""
    return history_pb2.ConversationEntry(
        entry_id=entry_id,
        turn_id=turn_id,
        role=history_pb2.ENTRY_ROLE_TOOL,
        content=content,
        tool_call_id=call.id,
        name=call.name,
        content_parts=list(parts),
    )


def tool_round(
    round_id: str,
    calls: Sequence[common_pb2.ToolCall],
    results: Mapping[str, str],
    content: str = "",
    turn_id: str = "",
) -> list[history_pb2.ConversationEntry]:
    """The assistant entry that calls `calls`, then one tool entry per call with `results[call.id]`.

    Entry ids are `{round_id}.assistant` and `{round_id}.{call.id}`, so sending the
    same round again is an idempotent repeat. A call without a result is an error.
    """
    missing = [call.id for call in calls if call.id not in results]
    if missing:
        raise ValueError(f"no result for tool call(s) {', '.join(missing)}")
    entries = [assistant_entry(f"{round_id}.assistant", content, calls, turn_id)]
    entries.extend(
        tool_result_entry(f"{round_id}.{call.id}", call, results[call.id], turn_id) for call in calls
    )
    return entries


def entries_of_reply(
    entry_id: str, reply: chat_pb2.ChatMessage, turn_id: str = ""
) -> history_pb2.ConversationEntry:
    """A model's reply (a ChatMessage) as the entry to store."""
    entry = history_pb2.ConversationEntry(
        entry_id=entry_id,
        turn_id=turn_id,
        role=entry_role(reply.role),
        content=reply.content,
        tool_calls=list(reply.tool_calls),
        tool_call_id=reply.tool_call_id,
        name=reply.name,
        artifact_refs=list(reply.artifact_refs),
    )
    if reply.HasField("reasoning_content"):
        entry.reasoning_content = reply.reasoning_content
    return entry


def turn_ref(thread_id: str, turn_id: str) -> manifest_service_pb2.ManifestRef:
    """A ManifestRef naming a turn's latest manifest."""
    return manifest_service_pb2.ManifestRef(
        turn=manifest_service_pb2.TurnRef(thread_id=thread_id, turn_id=turn_id)
    )


def event_ref(event_id: int) -> manifest_service_pb2.ManifestRef:
    """A ManifestRef naming the manifest a manifest event published."""
    return manifest_service_pb2.ManifestRef(event_id=event_id)


def inline_ref(manifest: prompt_pb2.PromptManifest) -> manifest_service_pb2.ManifestRef:
    """A ManifestRef carrying the manifest itself."""
    return manifest_service_pb2.ManifestRef(manifest=manifest)
