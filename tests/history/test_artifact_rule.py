"""History messages carry their artifact block in content; renderers never add it twice."""

from __future__ import annotations

import pytest

from pioneer_grpc.artifacts import append_artifact_block, message_header
from pioneer_grpc.history.render import entry_text, to_chat_message
from pioneer_grpc.providers.render import render
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.v1 import chat_pb2, common_pb2, history_pb2

REFS = [
    common_pb2.ArtifactRef(
        artifact_id="a1", version_id="v1", display_name="car.jpg", kind="image", size_bytes=862_000
    ),
    common_pb2.ArtifactRef(
        artifact_id="a1", version_id="v1", display_name="car.jpg", kind="image", size_bytes=862_000
    ),
]
BLOCK = (
    "Available artifacts from this user message:\n"
    '- artifactId=a1, versionId=v1, name="car.jpg", kind=image, size=842 KB.'
)


def user_entry() -> history_pb2.ConversationEntry:
    return history_pb2.ConversationEntry(
        entry_id="u1",
        turn_id="t1",
        role=history_pb2.ENTRY_ROLE_USER,
        content="what car is this?",
        artifact_refs=REFS,
    )


def test_history_message_has_the_block_in_content_and_keeps_the_refs():
    message = to_chat_message(user_entry())
    assert message.content == f"what car is this?\n\n{BLOCK}"
    assert entry_text(user_entry()) == message.content
    assert len(message.artifact_refs) == 2
    assert message.role == chat_pb2.CHAT_ROLE_USER


def test_appending_the_block_again_changes_nothing():
    message = to_chat_message(user_entry())
    header = message_header("user")
    assert append_artifact_block(message.content, header, message.artifact_refs) == message.content
    assert append_artifact_block("what car is this?", header, REFS) == message.content
    block_only = append_artifact_block("", header, REFS)
    assert block_only == BLOCK
    assert append_artifact_block(block_only, header, REFS) == BLOCK


@pytest.mark.parametrize("provider", list(SPECS), ids=[spec.name for spec in SPECS.values()])
def test_every_provider_body_carries_a_history_block_once(provider):
    history_message = to_chat_message(user_entry())
    request = chat_pb2.ChatRequest(model="gemini-2.0-flash", messages=[history_message])
    body = render(provider, request).body_json
    assert body.count("Available artifacts from this user message:") == 1
    assert body.count("artifactId=a1") == 1
