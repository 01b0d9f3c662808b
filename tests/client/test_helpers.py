"""The client's helpers: role conversion, JSON schema to Struct, tool rounds, manifest refs."""

from __future__ import annotations

import pytest
from google.protobuf import json_format

from pioneer_grpc.client import (
    ToolCall,
    chat_role,
    entries_of_reply,
    entry_role,
    event_ref,
    inline_ref,
    json_struct,
    tool,
    tool_round,
    turn_ref,
)
from pioneer_grpc.v1 import chat_pb2, history_pb2, prompt_pb2


def test_roles_convert_by_name_not_by_number():
    pairs = {
        history_pb2.ENTRY_ROLE_USER: chat_pb2.CHAT_ROLE_USER,
        history_pb2.ENTRY_ROLE_ASSISTANT: chat_pb2.CHAT_ROLE_ASSISTANT,
        history_pb2.ENTRY_ROLE_TOOL: chat_pb2.CHAT_ROLE_TOOL,
        history_pb2.ENTRY_ROLE_SYSTEM: chat_pb2.CHAT_ROLE_SYSTEM,
    }
    for entry, chat in pairs.items():
        assert history_pb2.EntryRole.Name(entry).removeprefix("ENTRY_") == chat_pb2.ChatRole.Name(
            chat
        ).removeprefix("CHAT_")
        assert chat_role(entry) == chat
        assert entry_role(chat) == entry
    assert history_pb2.ENTRY_ROLE_USER != chat_pb2.CHAT_ROLE_USER  # why the helpers exist
    with pytest.raises(ValueError, match="unknown EntryRole 99"):
        chat_role(99)


def test_a_json_schema_becomes_a_struct_with_nested_values_and_lists():
    schema = {
        "type": "object",
        "properties": {"paths": {"type": "array", "items": {"type": "string"}}, "depth": {"type": "integer"}},
        "required": ["paths"],
        "additionalProperties": False,
    }
    struct = json_struct(schema)
    assert json_format.MessageToDict(struct) == {**schema}
    assert tool("find", "Find files", schema).parameters == struct
    assert json_format.MessageToDict(tool("noop", "Nothing").parameters) == {
        "type": "object",
        "properties": {},
    }
    with pytest.raises(TypeError):
        json_struct(["not", "an", "object"])  # type: ignore[arg-type]


def test_a_tool_round_is_the_call_then_one_result_per_call_with_stable_ids():
    calls = [ToolCall(id="c1", name="read", arguments="{}"), ToolCall(id="c2", name="list", arguments="{}")]
    entries = tool_round("r1", calls, {"c1": "one", "c2": "two"}, turn_id="u1")
    assert [(e.entry_id, history_pb2.EntryRole.Name(e.role)) for e in entries] == [
        ("r1.assistant", "ENTRY_ROLE_ASSISTANT"),
        ("r1.c1", "ENTRY_ROLE_TOOL"),
        ("r1.c2", "ENTRY_ROLE_TOOL"),
    ]
    assert list(entries[0].tool_calls) == calls
    assert [(e.tool_call_id, e.name, e.content, e.turn_id) for e in entries[1:]] == [
        ("c1", "read", "one", "u1"),
        ("c2", "list", "two", "u1"),
    ]
    with pytest.raises(ValueError, match="no result for tool call"):
        tool_round("r2", calls, {"c1": "one"})


def test_a_reply_becomes_an_entry_with_the_entry_role():
    reply = chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_ASSISTANT, content="hi", reasoning_content="thought")
    entry = entries_of_reply("e1", reply, turn_id="u1")
    assert (entry.role, entry.content, entry.reasoning_content, entry.turn_id) == (
        history_pb2.ENTRY_ROLE_ASSISTANT,
        "hi",
        "thought",
        "u1",
    )


def test_manifest_refs():
    assert turn_ref("t", "u").WhichOneof("ref") == "turn"
    assert turn_ref("t", "u").turn.turn_id == "u"
    assert event_ref(7).event_id == 7
    manifest = prompt_pb2.PromptManifest()
    assert inline_ref(manifest).WhichOneof("ref") == "manifest"
