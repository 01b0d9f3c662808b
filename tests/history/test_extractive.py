"""The embedded summarizer keeps what a continuation needs, within its target, deterministically."""

from __future__ import annotations

from pioneer_grpc.history.render import summary_text
from pioneer_grpc.history.summarizers import ExtractiveSummarizer, SummaryRequest
from pioneer_grpc.history.tokens import count_tokens
from tests.history.builders import ASSISTANT, USER, entry

CONVERSATION = [
    entry("u1", USER, content="Please look at src/server/app.py and tell me why start fails."),
    entry(
        "a1", ASSISTANT, content="The error is a KeyError in load_config. It was fixed by adding a default."
    ),
    entry("u2", USER, content="No, don't change load_config; use a fallback in `build_context` instead."),
    entry(
        "a2",
        ASSISTANT,
        content="Understood. We decided to keep load_config as it is because tests rely on it.",
    ),
    entry("u3", USER, content="Next, still need to migrate docs/setup.md. Thanks!"),
    entry("a3", ASSISTANT, content="Sure, happy to help with that."),
]


async def summarize(entries, target: int, previous: str = "") -> str:
    request = SummaryRequest(entries=entries, previous_summary=previous, target_tokens=target, model="")
    return await ExtractiveSummarizer().summarize(request)


async def test_keeps_paths_decisions_corrections_errors_and_open_tasks():
    text = await summarize(CONVERSATION, 400)
    assert text == (
        "Files and names:\n- src/server/app.py, build_context, docs/setup.md\n\n"
        "User corrections and preferences:\n"
        "- No, don't change load_config; use a fallback in `build_context` instead.\n\n"
        "Decisions:\n"
        "- We decided to keep load_config as it is because tests rely on it.\n\n"
        "Errors and fixes:\n"
        "- Please look at src/server/app.py and tell me why start fails.\n"
        "- The error is a KeyError in load_config.\n"
        "- It was fixed by adding a default.\n\n"
        "Open tasks:\n"
        "- Next, still need to migrate docs/setup.md.\n\n"
        "Latest request:\n"
        "Next, still need to migrate docs/setup.md. Thanks!"
    )
    assert "happy to help" not in text


async def test_stays_within_the_target_and_prefers_the_newest():
    long = [
        entry(f"u{i}", USER, content=f"Actually, prefer option {i} for module_{i}.py over the old one.")
        for i in range(200)
    ]
    text = await summarize(long, 150)
    [tokens] = await count_tokens([summary_text(text)])
    assert tokens <= 150
    assert "option 199" in text
    assert "option 0 " not in text


async def test_is_deterministic_and_carries_a_previous_summary_forward():
    first = await summarize(CONVERSATION[:3], 400)
    again = await summarize(CONVERSATION[:3], 400)
    assert first == again
    second = await summarize(CONVERSATION[3:], 400, previous=first)
    assert "No, don't change load_config" in second  # from the previous summary
    assert "We decided to keep load_config" in second  # from the new entries
