"""The transcript a summarizer reads: speaker labels, calls, and the cuts of long assistant and tool
text (summarizers/base.py)."""

from __future__ import annotations

from pioneer_grpc.history.summarizers.base import ASSISTANT_CHARS, TOOL_CHARS, TranscriptLine, transcript
from pioneer_grpc.v1 import common_pb2
from tests.history.builders import ASSISTANT, TOOL, USER, entry


def test_each_entry_is_a_line_with_its_speaker():
    result = entry("t", TOOL, content="3 matches", answers="c1")
    result.name = "grep"
    nameless = entry("t2", TOOL, content="done", answers="c2")
    assert transcript(
        [entry("u", USER, content="hi"), entry("a", ASSISTANT, content="hello"), result, nameless]
    ) == [
        TranscriptLine("User", "hi"),
        TranscriptLine("Assistant", "hello"),
        TranscriptLine("Tool grep", "3 matches"),
        TranscriptLine("Tool", "done"),
    ]


def test_an_assistants_calls_follow_its_text_with_arguments_cut_at_200():
    call = entry("a", ASSISTANT, content="Looking.", calls=("c1", "c2"))
    call.tool_calls[0].arguments = '{"q": "' + "x" * 300 + '"}'
    call.tool_calls[1].name = "ls"
    [line] = transcript([call])
    assert line.text == (
        "Looking.\n[called read_file(" + call.tool_calls[0].arguments[:200] + " [...]); ls({})]"
    )
    silent = entry("a2", ASSISTANT, content="", calls=("c3",))
    assert transcript([silent]) == [TranscriptLine("Assistant", "[called read_file({})]")]


def test_long_assistant_and_tool_text_is_cut_user_text_is_not():
    long = "y" * 5000
    result = entry("t", TOOL, content=long, answers="c1")
    lines = transcript([entry("u", USER, content=long), entry("a", ASSISTANT, content=long), result])
    assert [len(line.text) for line in lines] == [5000, ASSISTANT_CHARS + 6, TOOL_CHARS + 6]
    assert lines[1].text == "y" * 3000 + " [...]"
    assert lines[2].text == "y" * 1000 + " [...]"
    exact = entry("a", ASSISTANT, content="z" * ASSISTANT_CHARS)
    assert transcript([exact])[0].text == "z" * 3000


def test_artifact_refs_are_read_and_an_entry_without_text_is_left_out():
    with_ref = entry("u", USER, content="see")
    with_ref.artifact_refs.append(common_pb2.ArtifactRef(artifact_id="a1", display_name="plot.png"))
    [line] = transcript([with_ref, entry("e", USER, content="")])
    assert line.speaker == "User"
    assert line.text.startswith("see\n")
    assert "plot.png" in line.text
