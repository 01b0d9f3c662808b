"""The texts whose tokens make up a message's count, for a stored entry and for a chat message
(history/render.py): what a budget counts is what the model reads."""

from __future__ import annotations

from pioneer_grpc.history.render import chat_counted_texts, chat_text, counted_texts, entry_counted_texts
from pioneer_grpc.v1 import chat_pb2, common_pb2
from tests.history.builders import ASSISTANT, USER, entry

REF = common_pb2.ArtifactRef(artifact_id="a1")


def block(role: str) -> str:
    return (
        f'\n\nAvailable artifacts from this {role} message:\n- artifactId=a1, versionId=null, name="", kind=.'
    )


def test_a_chat_message_reads_with_the_artifact_block_of_its_role():
    message = chat_pb2.ChatMessage(content="out", artifact_refs=[REF])
    for role, name in [
        (chat_pb2.CHAT_ROLE_TOOL, "tool"),
        (chat_pb2.CHAT_ROLE_ASSISTANT, "assistant"),
        (chat_pb2.CHAT_ROLE_SYSTEM, "system"),
        (chat_pb2.CHAT_ROLE_USER, "user"),
        (chat_pb2.CHAT_ROLE_UNSPECIFIED, "user"),
    ]:
        message.role = role
        assert chat_text(message) == "out" + block(name)
    assert chat_text(chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content="plain")) == "plain"


def test_a_message_counts_its_text_then_each_calls_name_and_arguments():
    assert counted_texts("hi", []) == ["hi"]
    assert counted_texts("hi", [("grep", '{"q": 1}'), ("ls", "{}")]) == ["hi", "grep", '{"q": 1}', "ls", "{}"]
    message = chat_pb2.ChatMessage(
        role=chat_pb2.CHAT_ROLE_ASSISTANT,
        content="ok",
        artifact_refs=[REF],
        tool_calls=[common_pb2.ToolCall(id="c1", name="grep", arguments='{"q": 1}')],
    )
    assert chat_counted_texts(message) == ["ok" + block("assistant"), "grep", '{"q": 1}']


def test_an_entry_counts_its_text_its_text_parts_then_its_calls():
    stored = entry("a", ASSISTANT, content="ok", calls=("c1",))
    stored.artifact_refs.append(REF)
    assert entry_counted_texts(stored) == ["ok" + block("assistant"), "read_file", "{}"]
    with_parts = entry("u", USER, content="look")
    with_parts.content_parts.extend(
        [
            chat_pb2.ContentPart(text="first"),
            chat_pb2.ContentPart(image=chat_pb2.MediaPart(uri="gs://b/i.png")),
            chat_pb2.ContentPart(text="second"),
        ]
    )
    assert entry_counted_texts(with_parts) == ["look", "first", "second"]
