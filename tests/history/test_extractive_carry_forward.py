"""The embedded summarizer over repeated compactions: what a previous summary carries forward, how items
and the latest request are cut, and which recent turns fit (summarizers/extractive.py)."""

from __future__ import annotations

import pytest

from pioneer_grpc.history.summarizers import SummaryRequest
from pioneer_grpc.history.summarizers.base import SummarizerError
from pioneer_grpc.history.summarizers.extractive import summarize_blocking
from pioneer_grpc.history.tokens import count_blocking
from tests.history.builders import ASSISTANT, TOOL, USER, entry

PREVIOUS = """Files and names:
- a/b.py, `x`, c.md

User corrections and preferences:
- Always use tabs.

Decisions:
- We chose sqlite.

Errors and fixes:
- The build failed on arm.

Open tasks:
- Still need docs.

Recent turns, as they were said:
User: something old that is not carried

Latest request:
an old request that is not carried"""


def summarize(entries, target: int = 400, previous: str = "") -> str:
    return summarize_blocking(
        SummaryRequest(entries=entries, previous_summary=previous, target_tokens=target, model="")
    )


def test_every_item_of_a_previous_summary_is_carried_but_its_turns_and_request():
    text = summarize([entry("u1", USER, content="ok then.")], previous=PREVIOUS)
    assert text == (
        "Files and names:\n- a/b.py, `x`, c.md\n\n"
        "User corrections and preferences:\n- Always use tabs.\n\n"
        "Decisions:\n- We chose sqlite.\n\n"
        "Errors and fixes:\n- The build failed on arm.\n\n"
        "Open tasks:\n- Still need docs.\n\n"
        "Latest request:\nok then."
    )


def test_new_items_follow_the_carried_ones_and_a_repeat_is_kept_once_newest():
    new = [
        entry("u1", USER, content="Please use `ruff` for lint. We chose sqlite."),
        entry("a1", ASSISTANT, content="Fixed the bug in c.md and d/e.py today."),
    ]
    text = summarize(new, previous=PREVIOUS)
    assert text.startswith("Files and names:\n- a/b.py, `x`, ruff, c.md, d/e.py\n\n")
    assert "Decisions:\n- We chose sqlite.\n\n" in text
    assert "User corrections and preferences:\n- Always use tabs.\n- Please use `ruff` for lint.\n\n" in text
    assert (
        "Errors and fixes:\n- The build failed on arm.\n- Fixed the bug in c.md and d/e.py today.\n\n" in text
    )


def test_a_summary_of_another_kind_becomes_one_earlier_item():
    previous = "The user  asked for a parser.\nIt was written in Rust.\n\nDecisions:\n- Use nom."
    text = summarize([entry("u1", USER, content="ok then.")], previous=previous)
    assert text == (
        "Decisions:\n- Use nom.\n\n"
        "Open tasks:\n- Earlier: The user asked for a parser. It was written in Rust.\n\n"
        "Latest request:\nok then."
    )
    long = "word " * 100
    carried = summarize([entry("u1", USER, content="ok then.")], previous=long)
    item = carried.split("Open tasks:\n- ")[1].split("\n")[0]
    assert item == ("Earlier: " + long.strip())[:277].rstrip() + "..."
    assert len(item) == 280


def test_items_are_cut_to_their_limit_with_whitespace_collapsed():
    sentence = "Actually   use\tthe " + "very " * 80 + "long name."
    text = summarize([entry("u1", USER, content=sentence), entry("u2", USER, content="ok then.")])
    item = text.split("User corrections and preferences:\n- ")[1].split("\n")[0]
    assert item == " ".join(sentence.split())[:277].rstrip() + "..."
    assert summarize([entry("u", USER, content="Actually use tabs.")]).count("Actually use tabs.") == 2


def test_the_latest_request_is_the_last_user_text_cut_to_600_characters():
    request = "Please " + "do this and that " * 50
    text = summarize([entry("u1", USER, content=request), entry("a1", ASSISTANT, content="On it.")], 2000)
    latest = text.split("Latest request:\n")[1]
    assert latest == " ".join(request.split())[:597].rstrip() + "..."
    only_spaces = summarize(
        [entry("u1", USER, content="Question one is here."), entry("u2", USER, content=" ")]
    )
    assert only_spaces.endswith("Latest request:\nQuestion one is here.")


def test_short_sentences_and_assistant_preferences_are_not_items():
    text = summarize(
        [entry("u", USER, content="No, ok."), entry("a", ASSISTANT, content="You should use tabs.")]
    )
    assert text == "Latest request:\nNo, ok."


def test_names_come_from_tool_call_arguments_too():
    call = entry("a", ASSISTANT, content="Reading it.", calls=("c1",))
    call.tool_calls[0].arguments = '{"path": "src/lib/mod.rs"}'
    text = summarize([entry("u", USER, content="Look at the parser."), call])
    assert text.startswith("Files and names:\n- src/lib/mod.rs\n\n")


def test_recent_turns_are_the_newest_that_fit_then_one_older_cut_to_fit():
    conversation = []
    for i in range(6):
        conversation.append(
            entry(f"u{i}", USER, content=f"Question {i} about the parser, with words to count.", tokens=200)
        )
        call = entry(
            f"a{i}", ASSISTANT, content=f"Answer {i}: it reads tokens.", calls=(f"c{i}",), tokens=200
        )
        call.tool_calls[0].arguments = f'{{"path": "src/p{i}.rs"}}'
        conversation.append(call)
        result = entry(f"t{i}", TOOL, answers=f"c{i}", content="fn main() {}\n" * 5, tokens=200)
        result.name = "read_file"
        conversation.append(result)
    text = summarize(conversation, 280)
    recent = text.split("Recent turns, as they were said:\n")[1].split("\n\nLatest request:")[0]
    turns = recent.split("\n\nUser: ")
    assert [t.split("\n")[0].removeprefix("User: ") for t in turns] == [
        "Question 3 about the parser, with words to count.",
        "Question 4 about the parser, with words to count.",
        "Question 5 about the parser, with words to count.",
    ]
    assert turns[0].endswith(" [...]")
    assert turns[2] == (
        "Question 5 about the parser, with words to count.\n"
        "Assistant: Answer 5: it reads tokens.\n"
        '[called read_file({"path": "src/p5.rs"})]\n'
        "Tool read_file: " + "fn main() {}\n" * 4 + "fn main() {}\n"
    )
    assert count_blocking(["Summary of earlier conversation:\n" + text])[0] <= 280
    # With 20 tokens more the third turn fits whole.
    assert "[...]" not in summarize(conversation, 300)


def test_a_short_conversation_gets_its_items_only():
    text = summarize([entry("u", USER, content="Please use tabs in every file.", tokens=10)], 4000)
    assert text == (
        "User corrections and preferences:\n- Please use tabs in every file.\n\n"
        "Latest request:\nPlease use tabs in every file."
    )


def test_entries_without_text_cannot_be_summarized():
    with pytest.raises(SummarizerError, match=r"^nothing to keep: the entries carry no text$"):
        summarize([entry("a", ASSISTANT, content="")])


def test_a_previous_summary_alone_is_summarized_again():
    assert summarize([], previous=PREVIOUS) == (
        "Files and names:\n- a/b.py, `x`, c.md\n\n"
        "User corrections and preferences:\n- Always use tabs.\n\n"
        "Decisions:\n- We chose sqlite.\n\n"
        "Errors and fixes:\n- The build failed on arm.\n\n"
        "Open tasks:\n- Still need docs."
    )


def test_the_older_turn_is_cut_to_the_room_left():
    conversation = []
    for i in range(6):
        conversation.append(
            entry(f"u{i}", USER, content=f"Question {i} about the parser, with words to count.", tokens=200)
        )
        call = entry(
            f"a{i}", ASSISTANT, content=f"Answer {i}: it reads tokens.", calls=(f"c{i}",), tokens=200
        )
        call.tool_calls[0].arguments = f'{{"path": "src/p{i}.rs"}}'
        conversation.append(call)
        result = entry(f"t{i}", TOOL, answers=f"c{i}", content="fn main() {}\n" * 5, tokens=200)
        result.name = "read_file"
        conversation.append(result)
    cut_lengths = []
    for target in (276, 280, 290):
        recent = summarize(conversation, target).split("Recent turns, as they were said:\n")[1]
        oldest = recent.split("\n\nUser: ")[0]
        assert oldest.startswith("User: Question 3 about the parser")
        assert oldest.endswith(" [...]")
        cut_lengths.append(len(oldest))
    assert cut_lengths == [135, 149, 183]


def test_a_long_latest_request_gets_a_quarter_of_the_room():
    request = "Please " + "rewrite the parser module so that it streams tokens " * 12
    collapsed = " ".join(request.split())
    lengths = []
    for target in (120, 200, 400):
        latest = summarize(
            [entry("u", USER, content=request), entry("a", ASSISTANT, content="On it.")], target
        )
        cut = latest.split("Latest request:\n")[1]
        assert cut.endswith("...")
        assert collapsed.startswith(cut.removesuffix("..."))
        lengths.append(len(cut))
    assert lengths == [98, 213, 501]


def pair(tokens: int) -> list:
    return [
        entry("u", USER, content="Tell me about the weather in Lisbon today.", tokens=tokens),
        entry("a", ASSISTANT, content="It is sunny and warm, about 25 degrees.", tokens=tokens),
    ]


def test_recent_turns_go_only_while_the_summary_stays_under_half_the_conversation():
    # Each entry costs its stored count plus 4 tokens of message overhead.
    assert "Recent turns" not in summarize(pair(80))
    assert summarize(pair(81)) == (
        "Recent turns, as they were said:\n"
        "User: Tell me about the weather in Lisbon today.\n"
        "Assistant: It is sunny and warm, about 25 degrees.\n\n"
        "Latest request:\nTell me about the weather in Lisbon today."
    )


def test_the_previous_summary_counts_toward_the_conversation():
    # Entries stored without a count cost their message overhead alone: too little for recent turns.
    assert "Recent turns" not in summarize(pair(0))
    # Recent turns of a previous summary are not carried, but they count as conversation replaced.
    words = "Recent turns, as they were said:\n" + "User: old words here. " * 26
    assert "Recent turns, as they were said:\nUser: Tell me" in summarize(pair(0), previous=words)
    fewer = "Recent turns, as they were said:\n" + "User: old words here. " * 25
    assert "Recent turns" not in summarize(pair(0), previous=fewer)


def test_earlier_loose_text_is_the_first_open_task():
    previous = "Some loose text here.\n\nOpen tasks:\n- Still need docs."
    assert summarize([entry("u", USER, content="ok then.")], previous=previous) == (
        "Open tasks:\n- Earlier: Some loose text here.\n- Still need docs.\n\nLatest request:\nok then."
    )


def test_an_assistant_entrys_text_is_read_with_its_calls_and_short_sentences_are_skipped():
    call = entry("a", ASSISTANT, content="Ok. We decided to use nom because it is fast.", calls=("c1",))
    assert summarize([entry("u", USER, content="Parse it."), call]) == (
        "Decisions:\n- We decided to use nom because it is fast.\n\nLatest request:\nParse it."
    )
    # Eight characters make a sentence.
    assert summarize([entry("u", USER, content="Fix bug. ok")]) == (
        "Errors and fixes:\n- Fix bug.\n\nLatest request:\nFix bug. ok"
    )


def test_an_item_of_exactly_280_characters_is_kept_whole():
    sentence = "Actually " + "x" * 271
    text = summarize([entry("u", USER, content=sentence), entry("u2", USER, content="ok then.")])
    assert f"- {sentence}\n" in text


def test_items_and_recent_turns_share_the_target():
    many = [
        entry(
            f"u{i}",
            USER,
            content=f"Actually, prefer option {i} for module_{i}.py over the old one.",
            tokens=40,
        )
        for i in range(30)
    ]
    text = summarize(many, 300)
    preferences = [
        f"- Actually, prefer option {i} for module_{i}.py over the old one." for i in range(25, 30)
    ]
    turns = [f"User: Actually, prefer option {i} for module_{i}.py over the old one." for i in range(25, 30)]
    assert text == (
        "Files and names:\n- " + ", ".join(f"module_{i}.py" for i in range(24, 30)) + "\n\n"
        "User corrections and preferences:\n" + "\n".join(preferences) + "\n\n"
        "Recent turns, as they were said:\n" + "\n\n".join(turns) + "\n\n"
        "Latest request:\nActually, prefer option 29 for module_29.py over the old one."
    )
    assert count_blocking(["Summary of earlier conversation:\n" + text])[0] == 247
