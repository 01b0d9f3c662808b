"""The embedded summarizer: deterministic, no model, picks sentences by what they carry.

It keeps, newest first and within the target: file paths and names, decisions,
the user's corrections and preferences, errors and their fixes, open tasks, and
the latest request. Items of a previous extractive summary are carried forward
as older items, so repeated compression keeps what still fits.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from dataclasses import dataclass

from pioneer_grpc.history.render import summary_text
from pioneer_grpc.history.summarizers.base import SummarizerError, SummaryRequest
from pioneer_grpc.history.tokens import count_blocking
from pioneer_grpc.v1 import history_pb2

ITEM_CHARS = 280
LATEST_REQUEST_CHARS = 600
FILES_HEADING = "Files and names"
LATEST_HEADING = "Latest request"
# (heading, pattern) in priority order; a sentence goes to the first that matches.
CATEGORIES: list[tuple[str, re.Pattern[str]]] = [
    (
        "User corrections and preferences",
        re.compile(
            r"\b(no[,.]|not that|actually|instead|rather|don't|do not|never|always|prefer|wrong|"
            r"please use|should(?:n't)?|must(?:n't)?|I want|I'd like)\b",
            re.I,
        ),
    ),
    (
        "Decisions",
        re.compile(
            r"\b(decided?|decision|agreed?|chose|chosen|going with|settled on|we will|we'll|let's|"
            r"switch(?:ed)? to|use [\w.-]+ (?:instead|for)|because)\b",
            re.I,
        ),
    ),
    (
        "Errors and fixes",
        re.compile(
            r"\b(error|exception|traceback|failed|failing|fails|crash(?:ed)?|bug|broken|fixed|fix|"
            r"resolved|panic)\b",
            re.I,
        ),
    ),
    (
        "Open tasks",
        re.compile(
            r"\b(todo|to do|next|remaining|still need|pending|in progress|not yet|open|left to)\b", re.I
        ),
    ),
]
PATH_PATTERN = re.compile(
    r"(?<![\w/])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:py|rs|go|ts|tsx|js|jsx|json|toml|yaml|yml|md|"
    r"txt|sql|sh|proto|c|h|cc|cpp|hpp|java|kt|rb|css|html|lock|cfg|ini)\b"
)
NAME_PATTERN = re.compile(r"`([^`\n]{2,80})`")
SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
HEADINGS = [FILES_HEADING, *(heading for heading, _ in CATEGORIES), LATEST_HEADING]


@dataclass
class _Collected:
    names: list[str]
    items: dict[str, list[str]]
    latest_request: str


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _parse_previous(summary: str) -> _Collected:
    """Items of an earlier extractive summary by section; other text becomes one item."""
    collected = _Collected(names=[], items={h: [] for h, _ in CATEGORIES}, latest_request="")
    section = ""
    loose: list[str] = []
    for line in summary.splitlines():
        heading = line.rstrip(":")
        if heading in HEADINGS:
            section = heading
        elif section == FILES_HEADING and line.startswith("- "):
            collected.names.extend(n for n in line[2:].split(", ") if n)
        elif section in collected.items and line.startswith("- "):
            collected.items[section].append(line[2:])
        elif line.strip() and section != LATEST_HEADING:
            loose.append(line.strip())
    if loose:
        collected.items[CATEGORIES[-1][0]].insert(0, _cut("Earlier: " + " ".join(loose), ITEM_CHARS))
    return collected


def _collect(request: SummaryRequest) -> _Collected:
    collected = _parse_previous(request.previous_summary)
    for entry in request.entries:
        text = entry.content
        for call in entry.tool_calls:
            text += f"\n{call.name} {call.arguments}"
        collected.names.extend(path.rstrip(".,;:") for path in PATH_PATTERN.findall(text))
        collected.names.extend(NAME_PATTERN.findall(text))
        if entry.role == history_pb2.ENTRY_ROLE_USER and entry.content.strip():
            collected.latest_request = _cut(entry.content, LATEST_REQUEST_CHARS)
        for sentence in SENTENCE_SPLIT.split(text):
            if len(sentence.strip()) < 8:
                continue
            for heading, pattern in CATEGORIES:
                if heading.startswith("User") and entry.role != history_pb2.ENTRY_ROLE_USER:
                    continue
                if pattern.search(sentence):
                    collected.items[heading].append(_cut(sentence, ITEM_CHARS))
                    break
    return collected


def _newest_unique(values: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for value in reversed(list(values)):
        if value not in seen:
            seen.add(value)
            out.append(value)
    return out


def _render(names: list[str], chosen: dict[str, list[str]], latest: str) -> str:
    blocks: list[str] = []
    if names:
        blocks.append(f"{FILES_HEADING}:\n- " + ", ".join(names))
    for heading, _ in CATEGORIES:
        if chosen[heading]:
            blocks.append(f"{heading}:\n" + "\n".join(f"- {item}" for item in chosen[heading]))
    if latest:
        blocks.append(f"{LATEST_HEADING}:\n{latest}")
    return "\n\n".join(blocks)


def summarize_blocking(request: SummaryRequest) -> str:
    """Fill the target round-robin over the categories, newest items first; render oldest first."""
    collected = _collect(request)
    # What a summary message costs besides its items: prefix, headings, bullets.
    fixed = count_blocking([summary_text(""), "\n\n".join(f"{h}:\n- " for h in HEADINGS)])
    room = request.target_tokens - sum(fixed)
    latest = collected.latest_request
    if latest:
        cost = count_blocking([latest])[0]
        if cost > room // 4:
            latest = _cut(latest, max(40, len(latest) * (room // 4) // cost))
            cost = count_blocking([latest])[0]
        room -= cost
    queues = {"names": _newest_unique(collected.names)}
    queues.update({h: _newest_unique(collected.items[h]) for h, _ in CATEGORIES})
    picked: dict[str, list[str]] = {key: [] for key in queues}
    while room > 0 and any(queues.values()):
        for key, queue in queues.items():
            if not queue:
                continue
            item = queue.pop(0)
            cost = count_blocking([item])[0] + 2
            if cost <= room:
                picked[key].append(item)
                room -= cost
    if not any(picked.values()) and not latest:
        raise SummarizerError("nothing to keep: the entries carry no text")
    chosen = {key: list(reversed(items)) for key, items in picked.items()}
    return _render(chosen.pop("names"), chosen, latest)


class ExtractiveSummarizer:
    name = "extractive"

    async def summarize(self, request: SummaryRequest) -> str:
        return await asyncio.to_thread(summarize_blocking, request)
