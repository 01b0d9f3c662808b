"""A prefix extended by one turn (prefix.extend_prefix) is the prefix rendered whole, on one small
hand-written conversation per provider: what it records from the prefix (the opening system text,
the tools called, the tool results, the media kinds, the rendered messages, the pairing, the call
ids' uses) and where the extension is refused.
"""

from __future__ import annotations

import pytest

from pioneer_grpc.providers.prefix import extend_prefix, render_prefix
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.v1 import chat_pb2, common_pb2

SYSTEM = chat_pb2.CHAT_ROLE_SYSTEM
USER = chat_pb2.CHAT_ROLE_USER
ASSISTANT = chat_pb2.CHAT_ROLE_ASSISTANT
TOOL = chat_pb2.CHAT_ROLE_TOOL
RENDERERS = sorted(p for p, spec in SPECS.items() if spec.render_messages is not None)


def _ids(provider: int) -> str:
    return SPECS[provider].name


def _text(role: int, text: str) -> chat_pb2.ChatMessage:
    return chat_pb2.ChatMessage(role=role, content=text)  # type: ignore[arg-type]


def _call(call_id: str, name: str) -> chat_pb2.ChatMessage:
    return chat_pb2.ChatMessage(
        role=ASSISTANT, tool_calls=[common_pb2.ToolCall(id=call_id, name=name, arguments='{"a": 1}')]
    )


def _result(call_id: str, name: str, text: str) -> chat_pb2.ChatMessage:
    return chat_pb2.ChatMessage(role=TOOL, tool_call_id=call_id, name=name, content=text)


IMAGE = chat_pb2.ChatMessage(
    role=USER,
    content="Look at this.",
    content_parts=[chat_pb2.ContentPart(image=chat_pb2.MediaPart(mime_type="image/png", data=b"\x89PNG"))],
)
# The first turn: opening system text, an image, a system note among the messages, a tool call answered.
FIRST = [
    _text(SYSTEM, "Be brief."),
    IMAGE,
    _text(SYSTEM, "Files are read-only."),
    _call("call_0", "read_file"),
    _result("call_0", "read_file", "contents"),
    _text(ASSISTANT, "Read it."),
]
# The next turn: the call id used again (as models do), a system note among the messages.
TURN = [
    _text(USER, "Now run the tests."),
    _text(SYSTEM, "Tests take a minute."),
    _call("call_0", "run_tests"),
    _result("call_0", "run_tests", "ok"),
    _text(ASSISTANT, "They pass."),
]
PLAIN = [_text(USER, "Hi."), _text(ASSISTANT, "Hello.")]


@pytest.mark.parametrize("provider", RENDERERS, ids=_ids)
def test_a_turn_extends_a_prefix_as_the_whole_conversation_renders(provider: int) -> None:
    whole = render_prefix(provider, [*FIRST, *TURN])
    prefix = render_prefix(provider, FIRST)
    assert whole is not None and prefix is not None
    extended = extend_prefix(provider, prefix, TURN)
    assert extended is not None
    assert extended.rendered == whole.rendered
    assert extended.system_texts == whole.system_texts
    assert extended.pairing == whole.pairing
    assert extended.call_id_uses == whole.call_id_uses == {"call_0": 2}
    assert extended == whole
    assert (extended.path, extended.size, extended.called) == ("chat_request", 11, ("read_file", "run_tests"))
    assert (extended.leading_system, extended.leading_origins) == (("Be brief.",), (0,))
    assert extended.has_results is True
    assert extended.media_kinds == frozenset({"image"})
    assert dict(extended.pairing.answered) == {"call_0": 9}
    if SPECS[provider].system_apart:
        assert extended.system_texts == ("Files are read-only.", "Tests take a minute.")
    assert len(extended.rendered) > len(prefix.rendered)


@pytest.mark.parametrize("provider", RENDERERS, ids=_ids)
def test_what_the_prefix_records_is_kept_when_the_turn_has_none_of_it(provider: int) -> None:
    prefix = render_prefix(provider, FIRST)
    assert prefix is not None
    extended = extend_prefix(provider, prefix, PLAIN)
    assert extended == render_prefix(provider, [*FIRST, *PLAIN])
    assert extended is not None
    assert extended.has_results is True
    assert extended.called == ("read_file",)
    assert extended.media_kinds == frozenset({"image"})
    assert extended.system_texts == prefix.system_texts


@pytest.mark.parametrize("provider", RENDERERS, ids=_ids)
def test_results_in_the_turn_alone_are_recorded(provider: int) -> None:
    prefix = render_prefix(provider, PLAIN)
    assert prefix is not None
    assert prefix.has_results is False
    assert (prefix.leading_system, prefix.leading_origins, prefix.called) == ((), (), ())
    extended = extend_prefix(provider, prefix, TURN)
    assert extended == render_prefix(provider, [*PLAIN, *TURN])
    assert extended is not None
    assert extended.has_results is True
    assert extended.called == ("run_tests",)
    assert extended.media_kinds == frozenset()


@pytest.mark.parametrize("provider", RENDERERS, ids=_ids)
def test_where_a_turn_may_not_follow_nothing_is_extended(provider: int) -> None:
    prefix = render_prefix(provider, FIRST, path="turn.chat")
    assert prefix is not None
    assert prefix.path == "turn.chat"
    assert extend_prefix(provider, prefix, PLAIN, path="turn.chat") is not None
    assert extend_prefix(provider, prefix, PLAIN) is None
    assert extend_prefix(provider, prefix, [_text(ASSISTANT, "More."), *PLAIN], path="turn.chat") is None
    assert extend_prefix(provider, prefix, [], path="turn.chat") is None
    other = next(p for p in RENDERERS if p != provider)
    assert extend_prefix(other, prefix, PLAIN, path="turn.chat") is None
