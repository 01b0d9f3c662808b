"""Tool calls paired with their results (providers/conversation.py), message by message.

The result put in for an interrupted call and the notice naming it, the exact
violation of each rule a result can break, an id used again once answered, a system
message closing calls only where system text stays among the messages, and a prefix
paired in two steps.
"""

from __future__ import annotations

from pioneer_grpc.errors import FieldViolation
from pioneer_grpc.providers.conversation import (
    INTERRUPTED_RESULT,
    INTERRUPTED_TOOL_CALL_ANSWERED,
    Notice,
    pair_prefix,
    pair_tool_calls,
)
from pioneer_grpc.v1 import chat_pb2, common_pb2

SYSTEM = chat_pb2.CHAT_ROLE_SYSTEM
USER = chat_pb2.CHAT_ROLE_USER
ASSISTANT = chat_pb2.CHAT_ROLE_ASSISTANT
TOOL = chat_pb2.CHAT_ROLE_TOOL


def _user(text: str = "hi") -> chat_pb2.ChatMessage:
    return chat_pb2.ChatMessage(role=USER, content=text)


def _calls(*ids: str, name: str = "read") -> chat_pb2.ChatMessage:
    return chat_pb2.ChatMessage(
        role=ASSISTANT, tool_calls=[common_pb2.ToolCall(id=i, name=name, arguments="{}") for i in ids]
    )


def _result(call_id: str, name: str = "") -> chat_pb2.ChatMessage:
    return chat_pb2.ChatMessage(role=TOOL, tool_call_id=call_id, name=name, content="done")


def _pair(
    *messages: chat_pb2.ChatMessage, system_apart: bool = True
) -> tuple[list[chat_pb2.ChatMessage], list[int], list[Notice], list[FieldViolation]]:
    request = chat_pb2.ChatRequest(messages=list(messages))
    paired, notices, violations = pair_tool_calls(request, "chat_request", system_apart=system_apart)
    return paired.messages, paired.origins, notices, violations


def _interrupted(call_id: str, name: str = "read") -> chat_pb2.ChatMessage:
    return chat_pb2.ChatMessage(role=TOOL, tool_call_id=call_id, name=name, content=INTERRUPTED_RESULT)


def _notice(call_id: str, index: int, position: int, name: str = "read") -> Notice:
    return Notice(
        INTERRUPTED_TOOL_CALL_ANSWERED,
        f"call {call_id!r} to {name!r} has no result before the next message: "
        "a result saying it was interrupted was sent in its place",
        f"chat_request.messages[{index}].tool_calls[{position}]",
    )


def test_an_interrupted_call_gets_a_result_where_its_result_belongs() -> None:
    messages, origins, notices, violations = _pair(_user(), _calls("c1", "c2"), _result("c2"), _user("next"))
    assert messages == [_user(), _calls("c1", "c2"), _result("c2"), _interrupted("c1"), _user("next")]
    assert origins == [0, 1, 2, 1, 3]
    assert notices == [_notice("c1", 1, 0)]
    assert violations == []


def test_a_call_after_one_without_an_id_is_still_paired() -> None:
    messages, origins, notices, _ = _pair(_user(), _calls("", "c2"))
    assert messages[-1] == _interrupted("c2")
    assert origins == [0, 1, 1]
    assert notices == [_notice("c2", 1, 1)]


def test_an_id_still_open_cannot_name_a_second_call() -> None:
    _, _, notices, violations = _pair(_user(), _calls("c1", "c1", "c3"))
    assert violations == [
        FieldViolation(
            "chat_request.messages[1].tool_calls[1].id",
            "duplicate of messages[1].tool_calls[0].id 'c1', which is still open: "
            "a call id must be unique among the calls not answered yet",
        )
    ]
    assert notices == [_notice("c1", 1, 0), _notice("c3", 1, 2)]


def test_a_second_result_names_the_message_that_answered_first() -> None:
    _, _, _, violations = _pair(_user(), _calls("c1"), _result("c1"), _result("c1"))
    assert violations == [
        FieldViolation(
            "chat_request.messages[3].tool_call_id", "a second result for call 'c1' (messages[2] answered it)"
        )
    ]


def test_a_result_after_another_message_names_the_call() -> None:
    _, _, notices, violations = _pair(_user(), _calls("c1"), _user("more"), _result("c1"))
    assert notices == [_notice("c1", 1, 0)]
    assert violations == [
        FieldViolation(
            "chat_request.messages[3].tool_call_id",
            "answers call 'c1' of messages[1], but another message comes between: "
            "a result must follow the assistant message that made the call",
        )
    ]


def test_an_id_used_again_names_the_new_call() -> None:
    _, _, notices, violations = _pair(
        _user(), _calls("c1"), _result("c1"), _user("again"), _calls("c1"), _user("more"), _result("c1")
    )
    assert notices == [_notice("c1", 4, 0)]
    assert violations == [
        FieldViolation(
            "chat_request.messages[6].tool_call_id",
            "answers call 'c1' of messages[4], but another message comes between: "
            "a result must follow the assistant message that made the call",
        )
    ]


def test_a_system_message_closes_calls_only_where_system_text_stays_among_the_messages() -> None:
    system = chat_pb2.ChatMessage(role=SYSTEM, content="note")
    messages, _, notices, violations = _pair(_user(), _calls("c1"), system, _result("c1"), system_apart=True)
    assert (messages, notices, violations) == ([_user(), _calls("c1"), system, _result("c1")], [], [])
    messages, _, notices, violations = _pair(_user(), _calls("c1"), system, _result("c1"), system_apart=False)
    assert messages == [_user(), _calls("c1"), _interrupted("c1"), system, _result("c1")]
    assert notices == [_notice("c1", 1, 0)]
    assert [v.field for v in violations] == ["chat_request.messages[3].tool_call_id"]


def test_a_prefix_paired_in_two_steps_goes_on_from_the_first() -> None:
    first = chat_pb2.ChatRequest(messages=[_user(), _calls("c1"), _result("c1")])
    done = pair_prefix(first, "chat_request", system_apart=True)
    assert done is not None
    paired, state = done
    assert paired.origins == [0, 1, 2]
    assert (state.size, dict(state.answered), state.notices) == (3, {"c1": 2}, ())
    assert sorted(state.calls) == ["c1"]

    second = chat_pb2.ChatRequest(messages=[_user("next"), _calls("c2"), _result("c2")])
    done = pair_prefix(second, "chat_request", system_apart=True, prefix=state)
    assert done is not None
    paired, state = done
    assert paired.origins == [3, 4, 5]
    assert (state.size, dict(state.answered)) == (6, {"c1": 2, "c2": 5})

    late = chat_pb2.ChatRequest(messages=[_result("c1")])
    assert pair_prefix(late, "chat_request", system_apart=True, prefix=state) is None
    request = chat_pb2.ChatRequest(messages=[_result("c1")])
    _, _, violations = pair_tool_calls(request, "chat_request", system_apart=True, prefix=state)
    assert violations == [
        FieldViolation(
            "chat_request.messages[6].tool_call_id", "a second result for call 'c1' (messages[2] answered it)"
        )
    ]


def test_a_prefix_with_a_call_left_open_is_none() -> None:
    request = chat_pb2.ChatRequest(messages=[_user(), _calls("c1")])
    assert pair_prefix(request, "chat_request", system_apart=True) is None
