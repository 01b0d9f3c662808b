"""What a load sends for a thread an older version stored: each repair, its diagnostic, what it keeps
(repair.py)."""

from __future__ import annotations

from pioneer_grpc.history import diagnostics as codes
from pioneer_grpc.history.repair import INTERRUPTED_RESULT, INTERRUPTED_RESULT_TOKENS, repair
from pioneer_grpc.v1 import history_pb2
from tests.history.builders import ASSISTANT, TOOL, USER, entry


def calls(entry_id: str, *ids: str, arguments: str = "{}", turn: str = "t") -> history_pb2.ConversationEntry:
    made = entry(entry_id, ASSISTANT, calls=ids, turn=turn, sequence=7)
    for call in made.tool_calls:
        call.arguments = arguments
    return made


def result(entry_id: str, call_id: str, name: str = "") -> history_pb2.ConversationEntry:
    answered = entry(entry_id, TOOL, answers=call_id)
    answered.name = name
    return answered


def sent(entries: list[history_pb2.ConversationEntry]) -> list[str]:
    """Each sent entry as its id, or `synth:<call id>` for a synthesized result."""
    return [e.entry_id or f"synth:{e.tool_call_id}" for e in entries]


def notes(repaired) -> list[tuple[str, str, str]]:
    return [(d.code, d.entry_id, d.message) for d in repaired.diagnostics]


def test_a_sound_thread_is_sent_as_stored_without_diagnostics():
    thread = [entry("u"), calls("a", "c1", "c2"), result("r1", "c1"), result("r2", "c2"), entry("v")]
    repaired = repair(thread)
    assert sent(repaired.entries) == ["u", "a", "r1", "r2", "v"]
    assert repaired.diagnostics == []
    assert repaired.entries[1] is thread[1]


def test_an_unanswered_call_gets_a_result_saying_it_was_interrupted():
    call_entry = calls("a", "c1", "c2", turn="t9")
    call_entry.completed = False
    repaired = repair([call_entry, result("r1", "c1"), entry("u")])
    assert sent(repaired.entries) == ["a", "r1", "synth:c2", "u"]
    synthesized = repaired.entries[2]
    assert synthesized == history_pb2.ConversationEntry(
        turn_id="t9",
        role=TOOL,
        content=INTERRUPTED_RESULT,
        tool_call_id="c2",
        name="read_file",
        sequence=7,
        token_count=INTERRUPTED_RESULT_TOKENS,
        completed=False,
    )
    assert notes(repaired) == [
        (
            codes.TOOL_RESULT_MISSING,
            "a",
            "call 'c2' (read_file) has no stored result; sent a result saying it was interrupted",
        )
    ]


def test_the_last_calls_are_closed_at_the_end_or_left_pending():
    thread = [entry("u"), calls("a", "c1", "c2"), result("r1", "c1")]
    closed = repair(thread)
    assert sent(closed.entries) == ["u", "a", "r1", "synth:c2"]
    assert closed.pending == {}
    open_ = repair(thread, close_at_end=False)
    assert sent(open_.entries) == ["u", "a", "r1"]
    assert open_.diagnostics == []
    assert list(open_.pending) == ["c2"]
    assert open_.pending["c2"].entry_id == "a"


def test_an_earlier_unanswered_call_is_closed_even_when_the_end_is_left_open():
    thread = [calls("a", "c1"), entry("u"), calls("b", "c2")]
    repaired = repair(thread, close_at_end=False)
    assert sent(repaired.entries) == ["a", "synth:c1", "u", "b"]
    assert list(repaired.pending) == ["c2"]


def test_an_orphan_result_and_a_second_result_are_not_sent():
    thread = [result("r0", "c0"), calls("a", "c1"), result("r1", "c1"), result("r2", "c1")]
    repaired = repair(thread)
    assert sent(repaired.entries) == ["a", "r1"]
    assert notes(repaired) == [
        (
            codes.ORPHAN_TOOL_RESULT_DROPPED,
            "r0",
            "tool result for call 'c0' does not follow its call; not sent",
        ),
        (codes.DUPLICATE_TOOL_RESULT_SKIPPED, "r2", "call 'c1' was already answered; not sent"),
    ]


def test_a_result_under_another_name_is_sent_under_the_calls_name():
    stored = result("r1", "c1", name="write_file")
    repaired = repair([calls("a", "c1"), stored])
    assert repaired.entries[1].name == "read_file"
    assert repaired.entries[1].content == stored.content
    assert stored.name == "write_file"
    assert notes(repaired) == [
        (
            codes.TOOL_RESULT_NAME_REPAIRED,
            "r1",
            "result names tool 'write_file' but call 'c1' is to 'read_file'; sent as 'read_file'",
        )
    ]
    assert repair([calls("a", "c1"), result("r1", "c1", name="read_file")]).diagnostics == []


def test_an_empty_entry_is_skipped_without_closing_the_open_calls():
    empty = entry("e", USER, content=" ")
    repaired = repair([calls("a", "c1"), empty, result("r1", "c1")])
    assert sent(repaired.entries) == ["a", "r1"]
    assert notes(repaired) == [
        (codes.EMPTY_ENTRY_SKIPPED, "e", "entry has no content, tool calls or artifacts; not sent")
    ]


def test_invalid_calls_skip_the_entry_and_its_results():
    no_name = calls("a", "c1")
    no_name.tool_calls[0].name = ""
    repaired = repair([no_name, result("r1", "c1"), entry("u")])
    assert sent(repaired.entries) == ["u"]
    assert [(c, e) for c, e, _ in notes(repaired)] == [
        (codes.INVALID_TOOL_CALL_SKIPPED, "a"),
        (codes.ORPHAN_TOOL_RESULT_DROPPED, "r1"),
    ]
    assert notes(repaired)[0][2] == (
        "a tool call has no id or no name; the assistant entry and its results are not sent"
    )
    no_id = calls("b", "")
    assert repair([no_id]).diagnostics[0].code == codes.INVALID_TOOL_CALL_SKIPPED


def test_arguments_that_are_no_json_object_skip_the_entry():
    repaired = repair([calls("a", "c1", arguments="[1]")])
    assert repaired.entries == []
    code, entry_id, message = notes(repaired)[0]
    assert (code, entry_id) == (codes.INVALID_TOOL_CALL_SKIPPED, "a")
    assert message.startswith("call 'c1': ")
    assert message.endswith("; the assistant entry and its results are not sent")


def test_a_repeated_call_id_in_one_entry_skips_it():
    repaired = repair([calls("a", "c1", "c1"), result("r1", "c1")])
    assert sent(repaired.entries) == []
    assert notes(repaired)[0] == (
        codes.DUPLICATE_TOOL_CALL_SKIPPED,
        "a",
        "call id 'c1' is used twice by the entry; the assistant entry and its results are not sent",
    )
    # Across entries an id may repeat.
    assert sent(repair([calls("a", "c1"), result("r1", "c1"), calls("b", "c1")]).entries) == [
        "a",
        "r1",
        "b",
        "synth:c1",
    ]


def test_arguments_a_provider_refuses_are_sent_repaired_and_said_so():
    stored = calls("a", "c1", "c2")
    stored.tool_calls[0].arguments = '{"x": NaN, "y": 1e999}'
    stored.tool_calls[1].arguments = '{"ok": 1}'
    repaired = repair([stored, result("r1", "c1"), result("r2", "c2")])
    assert sent(repaired.entries) == ["a", "r1", "r2"]
    fixed = repaired.entries[0]
    assert fixed.tool_calls[0].arguments == '{"x": null, "y": null}'
    assert fixed.tool_calls[1].arguments == '{"ok": 1}'
    assert stored.tool_calls[0].arguments == '{"x": NaN, "y": 1e999}'
    code, entry_id, message = notes(repaired)[0]
    assert (code, entry_id) == (codes.TOOL_ARGUMENTS_REPAIRED, "a")
    assert message.startswith("call 'c1': ")
    assert "call 'c2'" not in message
    assert message.endswith(
        ": not accepted by every provider's JSON; sent as null (numbers) or U+FFFD (lone surrogates)"
    )
    assert len(repaired.diagnostics) == 1


def test_each_repaired_call_has_its_note():
    stored = calls("a", "c1", "c2", arguments='{"x": NaN}')
    message = repair([stored]).diagnostics[0].message
    assert message.count("call 'c") == 2
    assert "; call 'c2': " in message
