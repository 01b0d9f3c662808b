"""A message's counted texts take its text parts in order, between its text and its calls; an entry
becomes a message with its name and its content parts."""

from __future__ import annotations

from pioneer_grpc.history.render import chat_counted_texts, entry_counted_texts, to_chat_message
from pioneer_grpc.v1 import chat_pb2, history_pb2
from tests.builders import TOOL, entry, tool_call

PNG = chat_pb2.MediaPart(mime_type="image/png", data=b"\x89PNG\r\n")


def _parts(*texts: str) -> list[chat_pb2.ContentPart]:
    """Text parts with an image between the first and the rest."""
    parts = [chat_pb2.ContentPart(text=texts[0]), chat_pb2.ContentPart(image=PNG)]
    return parts + [chat_pb2.ContentPart(text=text) for text in texts[1:]]


def test_a_messages_text_parts_are_counted_in_order_between_its_text_and_its_calls():
    message = chat_pb2.ChatMessage(
        role=chat_pb2.CHAT_ROLE_ASSISTANT,
        content="Looking.",
        content_parts=_parts("first part", "second part"),
        tool_calls=[tool_call("c1", "read_file", '{"path": "a.md"}')],
    )
    assert chat_counted_texts(message) == [
        "Looking.",
        "first part",
        "second part",
        "read_file",
        '{"path": "a.md"}',
    ]


def test_media_parts_are_not_counted_as_text():
    message = chat_pb2.ChatMessage(
        role=chat_pb2.CHAT_ROLE_USER,
        content="See the screenshot.",
        content_parts=[chat_pb2.ContentPart(image=PNG), chat_pb2.ContentPart(file=PNG)],
    )
    assert chat_counted_texts(message) == ["See the screenshot."]


def test_an_entry_and_its_message_count_the_same_texts():
    stored = entry(
        "r1",
        "turn-1",
        TOOL,
        content="2 files",
        tool_call_id="c1",
        name="list_files",
        content_parts=_parts("notes.txt", "todo.md"),
    )
    message = to_chat_message(stored)
    assert entry_counted_texts(stored) == chat_counted_texts(message) == ["2 files", "notes.txt", "todo.md"]


def test_an_entry_becomes_a_message_with_its_name_and_content_parts():
    stored = entry(
        "r1",
        "turn-1",
        TOOL,
        content="a screenshot",
        tool_call_id="c1",
        name="screenshot",
        content_parts=_parts("caption"),
    )
    message = to_chat_message(stored)
    assert message.role == chat_pb2.CHAT_ROLE_TOOL
    assert (message.name, message.tool_call_id, message.content) == ("screenshot", "c1", "a screenshot")
    assert list(message.content_parts) == _parts("caption")
    assert to_chat_message(stored, content="cut").content == "cut"


def test_an_assistant_entry_keeps_its_calls():
    call = tool_call("c9", "grep", '{"pattern": "x"}')
    stored = entry("a1", "turn-1", history_pb2.ENTRY_ROLE_ASSISTANT, content="", tool_calls=[call])
    message = to_chat_message(stored)
    assert list(message.tool_calls) == [call]
    assert entry_counted_texts(stored)[1:] == ["grep", '{"pattern": "x"}']
