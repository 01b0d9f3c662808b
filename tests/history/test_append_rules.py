"""What an append refuses, entry by entry and against the stored turns: the field and the message a
client shows (entry_rules.py)."""

from __future__ import annotations

from pioneer_grpc.errors import FieldViolation
from pioneer_grpc.history.entry_rules import (
    StoredCalls,
    call_violations,
    content_violations,
    is_empty,
    named_call_ids,
)
from pioneer_grpc.v1 import chat_pb2, common_pb2, history_pb2
from tests.history.builders import ASSISTANT, TOOL, USER, entry


def calls(
    entry_id: str, *ids: str, turn: str = "t", name: str = "read_file"
) -> history_pb2.ConversationEntry:
    made = entry(entry_id, ASSISTANT, calls=ids, turn=turn)
    for call in made.tool_calls:
        call.name = name
    return made


def result(entry_id: str, call_id: str, turn: str = "t", name: str = "") -> history_pb2.ConversationEntry:
    answered = entry(entry_id, TOOL, answers=call_id, turn=turn)
    answered.name = name
    return answered


def as_pairs(violations: list[FieldViolation]) -> list[tuple[str, str]]:
    return [(v.field, v.description) for v in violations]


def test_an_entry_is_empty_only_without_text_calls_artifacts_and_parts():
    blank = history_pb2.ConversationEntry(role=USER, content="  \n ")
    assert is_empty(blank)
    assert not is_empty(history_pb2.ConversationEntry(role=USER, content=" x "))
    assert not is_empty(calls("a", "c1"))
    assert not is_empty(
        history_pb2.ConversationEntry(role=USER, artifact_refs=[common_pb2.ArtifactRef(artifact_id="a1")])
    )
    assert not is_empty(
        history_pb2.ConversationEntry(role=USER, content_parts=[chat_pb2.ContentPart(text="x")])
    )
    # A tool that printed nothing still answers its call.
    assert not is_empty(history_pb2.ConversationEntry(role=TOOL, tool_call_id="c1"))


def test_content_violations_name_the_entry_and_the_call():
    bad_arguments = calls("a", "c1", "c2")
    bad_arguments.tool_calls[1].arguments = "[1, 2]"
    found = content_violations(
        [entry("u", content="fine"), history_pb2.ConversationEntry(role=USER), bad_arguments], prefix="batch"
    )
    assert [v.field for v in found] == ["batch[1].content", "batch[2].tool_calls[1].arguments"]
    assert found[0].description == "the entry is empty: it needs content, tool calls or artifact refs"
    assert "JSON object" in found[1].description
    assert content_violations([entry("u")]) == []
    assert content_violations([history_pb2.ConversationEntry(role=USER)])[0].field == "entries[0].content"


def test_a_result_answers_an_open_call_of_its_turn_once_under_its_name():
    stored = StoredCalls(turns={"t": [calls("a", "c1", "c2")]}, thread_calls={"c1": "a", "c2": "a"})
    batch = [
        result("r1", "c1"),
        result("r2", "c1"),
        result("r3", "c2", name="write_file"),
        result("r4", "nope"),
    ]
    assert as_pairs(call_violations(batch, stored)) == [
        ("entries[1].tool_call_id", "call 'c1' is already answered by entry 'r1'"),
        ("entries[2].name", "call 'c2' is to tool 'read_file', not 'write_file'"),
        ("entries[3].tool_call_id", "no call with id 'nope' was made in this thread"),
    ]


def test_a_result_under_the_calls_own_name_or_no_name_is_accepted():
    stored = StoredCalls(turns={"t": [calls("a", "c1", "c2")]})
    assert call_violations([result("r1", "c1", name="read_file"), result("r2", "c2")], stored) == []


def test_a_call_closed_by_a_later_entry_cannot_be_answered():
    stored = StoredCalls(turns={"t": [calls("a", "c1"), entry("u", USER)]}, thread_calls={"c1": "a"})
    assert as_pairs(call_violations([result("r1", "c1")], stored, prefix="e")) == [
        (
            "e[0].tool_call_id",
            "call 'c1' (entry 'a') is not open: a result follows its call in the same turn, "
            "before the turn's next user or assistant entry",
        )
    ]


def test_a_call_of_another_turn_is_not_open_in_this_one():
    stored = StoredCalls(turns={"t1": [calls("a", "c1", turn="t1")]}, thread_calls={"c1": "a"})
    found = call_violations([result("r1", "c1", turn="t2")], stored)
    assert [v.field for v in found] == ["entries[0].tool_call_id"]
    assert "is not open" in found[0].description


def test_a_stored_result_closes_its_call_for_the_batch():
    stored = StoredCalls(turns={"t": [calls("a", "c1"), result("r1", "c1")]})
    assert as_pairs(call_violations([result("r2", "c1")], stored)) == [
        ("entries[0].tool_call_id", "call 'c1' is already answered by entry 'r1'")
    ]


def test_calls_made_in_the_batch_are_answered_in_the_batch():
    batch = [calls("a", "c1"), result("r1", "c1"), calls("b", "c1"), result("r2", "c1")]
    assert call_violations(batch, StoredCalls()) == []


def test_a_new_assistant_entry_in_the_batch_closes_the_earlier_calls():
    batch = [calls("a", "c1"), calls("b", "c2"), result("r1", "c1")]
    found = call_violations(batch, StoredCalls())
    assert [v.field for v in found] == ["entries[2].tool_call_id"]
    assert "(entry 'a') is not open" in found[0].description


def test_a_refused_result_does_not_count_as_an_answer():
    batch = [calls("a", "c1"), result("r1", "c1", name="other"), result("r2", "c1")]
    assert [v.field for v in call_violations(batch, StoredCalls())] == ["entries[1].name"]


def test_calls_of_one_entry_need_distinct_ids():
    batch = [calls("a", "c1", "c2", "c1", "c2")]
    assert as_pairs(call_violations(batch, StoredCalls())) == [
        (
            "entries[0].tool_calls[2].id",
            "call id 'c1' is already used by tool_calls[0] of this entry: the calls open together need "
            "distinct ids",
        ),
        (
            "entries[0].tool_calls[3].id",
            "call id 'c2' is already used by tool_calls[1] of this entry: the calls open together need "
            "distinct ids",
        ),
    ]


def test_entries_already_stored_are_not_checked_again():
    stored = StoredCalls(stored_entry_ids={"r1"})
    assert call_violations([result("r1", "nope"), result("r2", "nope")], stored)[0].field == (
        "entries[1].tool_call_id"
    )


def test_named_call_ids_lists_every_made_and_answered_id_once_in_order():
    batch = [
        calls("a", "c1", "c2"),
        result("r1", "c2"),
        result("r2", "c3"),
        entry("u", USER, answers="not-a-result"),
        history_pb2.ConversationEntry(
            role=ASSISTANT, tool_calls=[common_pb2.ToolCall(id="", name="x", arguments="{}")]
        ),
    ]
    assert named_call_ids(batch) == ["c1", "c2", "c3"]
