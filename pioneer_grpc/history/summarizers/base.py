"""The summarizer interface: earlier conversation in, summary text out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from pioneer_grpc.history.render import ROLE_NAMES, entry_text
from pioneer_grpc.v1 import history_pb2

# Assistant text beyond this many characters is cut in a summary request (as in the original).
ASSISTANT_CHARS = 3000
# Tool results are evidence, not conversation: a shorter cut keeps the request small.
TOOL_CHARS = 1000


@dataclass(frozen=True)
class SummaryRequest:
    # Entries to fold into the summary, oldest first.
    entries: Sequence[history_pb2.ConversationEntry]
    # The summary these entries follow ("" when there is none); the new one replaces it.
    previous_summary: str
    target_tokens: int
    # The thread's summary model, else its model; "" when neither is set.
    model: str


class SummarizerError(Exception):
    """The summarizer could not produce a summary; the message says why (it becomes a diagnostic)."""


class Summarizer(Protocol):
    name: str

    async def summarize(self, request: SummaryRequest) -> str: ...


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " [...]"


@dataclass(frozen=True)
class TranscriptLine:
    speaker: str
    text: str


def transcript(entries: Sequence[history_pb2.ConversationEntry]) -> list[TranscriptLine]:
    """One line per entry, with speaker labels; assistant and tool text cut to their limits."""
    lines: list[TranscriptLine] = []
    for entry in entries:
        text = entry_text(entry)
        role = ROLE_NAMES[entry.role]
        if entry.role == history_pb2.ENTRY_ROLE_ASSISTANT:
            calls = "; ".join(f"{c.name}({_cut(c.arguments, 200)})" for c in entry.tool_calls)
            text = _cut(text, ASSISTANT_CHARS)
            if calls:
                text = f"{text}\n[called {calls}]" if text else f"[called {calls}]"
        elif entry.role == history_pb2.ENTRY_ROLE_TOOL:
            role = f"tool {entry.name}".strip()
            text = _cut(text, TOOL_CHARS)
        if text:
            lines.append(TranscriptLine(role.capitalize(), text))
    return lines
