"""The embedded summarizer: deterministic, no model, uses its whole target.

First the extracted items, newest first, in at most ITEMS_SHARE of the target:
file paths and names, decisions, the user's corrections and preferences, errors
and their fixes, open tasks, and the latest request. Then the most recent whole
turns as they were said (a tool call with its results, tool output cut to
its first TOOL_CHARS characters), newest first until one does not fit; what
room is left takes more items, then the next older turn cut to fit. A summary
never costs more than half of what it summarizes (else compaction would make
no progress), so a short conversation gets its items only.

Items of a previous extractive summary are carried forward as older items, so
repeated compression keeps what still fits; its recent turns are not carried
(their items were extracted when they were new).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from dataclasses import dataclass

from pioneer_grpc.history.render import summary_text
from pioneer_grpc.history.summarizers.base import SummarizerError, SummaryRequest, transcript
from pioneer_grpc.history.tokens import MESSAGE_OVERHEAD, count_blocking
from pioneer_grpc.v1 import history_pb2

ITEM_CHARS = 280
LATEST_REQUEST_CHARS = 600
# Share of the target the extracted items may fill before recent turns get the rest.
ITEMS_SHARE = 0.4
# A summary costs at most this share of the conversation it replaces.
MAX_SHARE_OF_CONVERSATION = 0.5
FILES_HEADING = "Files and names"
RECENT_HEADING = "Recent turns, as they were said"
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
HEADINGS = [FILES_HEADING, *(heading for heading, _ in CATEGORIES), RECENT_HEADING, LATEST_HEADING]


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
        elif line.strip() and section not in (LATEST_HEADING, RECENT_HEADING):
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


def _render(names: list[str], chosen: dict[str, list[str]], recent: list[str], latest: str) -> str:
    blocks: list[str] = []
    if names:
        blocks.append(f"{FILES_HEADING}:\n- " + ", ".join(names))
    for heading, _ in CATEGORIES:
        if chosen[heading]:
            blocks.append(f"{heading}:\n" + "\n".join(f"- {item}" for item in chosen[heading]))
    if recent:
        blocks.append(f"{RECENT_HEADING}:\n" + "\n\n".join(recent))
    if latest:
        blocks.append(f"{LATEST_HEADING}:\n{latest}")
    return "\n\n".join(blocks)


def _turns(entries: list[history_pb2.ConversationEntry]) -> list[str]:
    """Each turn (user entry to user entry) as transcript lines, oldest first."""
    turns: list[list[history_pb2.ConversationEntry]] = []
    for entry in entries:
        if not turns or entry.role == history_pb2.ENTRY_ROLE_USER:
            turns.append([])
        turns[-1].append(entry)
    rendered = ["\n".join(f"{line.speaker}: {line.text}" for line in transcript(turn)) for turn in turns]
    return [text for text in rendered if text]


class _Room:
    """Tokens left in the summary, spent item by item."""

    def __init__(self, tokens: int) -> None:
        self.left = tokens

    def take(self, text: str, extra: int = 2) -> bool:
        cost = count_blocking([text])[0] + extra
        if cost > self.left:
            return False
        self.left -= cost
        return True


def _fill_items(queues: dict[str, list[str]], picked: dict[str, list[str]], room: _Room) -> None:
    """Round-robin over the categories, newest items first, while anything fits."""
    while room.left > 0 and any(queues.values()):
        for key, queue in queues.items():
            if queue:
                item = queue.pop(0)
                if room.take(item):
                    picked[key].append(item)


def _recent_turns(turns: list[str], room: _Room) -> list[str]:
    """The newest whole turns that fit, then the next older one cut to fit; oldest first."""
    kept: list[str] = []
    for text in reversed(turns):
        if room.take(text, 3):
            kept.insert(0, text)
            continue
        # Characters per token of this turn, to cut it to what is left.
        tokens = max(1, count_blocking([text])[0])
        chars = len(text) * (room.left - 12) // tokens
        if chars > 80:
            cut = text[:chars].rstrip() + " [...]"
            if room.take(cut, 3):
                kept.insert(0, cut)
        break
    return kept


def _conversation_tokens(request: SummaryRequest) -> int:
    stored = sum(e.token_count + MESSAGE_OVERHEAD for e in request.entries)
    if not stored:
        stored = sum(count_blocking([e.content for e in request.entries]))
    return stored + (count_blocking([request.previous_summary])[0] if request.previous_summary else 0)


def summarize_blocking(request: SummaryRequest) -> str:
    """Items, then recent whole turns, then more items, within the target; each section oldest first."""
    collected = _collect(request)
    # What a summary message costs besides its items: prefix, headings, bullets.
    fixed = sum(count_blocking([summary_text(""), "\n\n".join(f"{h}:\n- " for h in HEADINGS)]))
    room = _Room(request.target_tokens - fixed)
    latest = collected.latest_request
    if latest:
        cost = count_blocking([latest])[0]
        if cost > room.left // 4:
            latest = _cut(latest, max(40, len(latest) * (room.left // 4) // max(1, cost)))
        room.take(latest, 0)
    queues = {"names": _newest_unique(collected.names)}
    queues.update({h: _newest_unique(collected.items[h]) for h, _ in CATEGORIES})
    picked: dict[str, list[str]] = {key: [] for key in queues}
    items = _Room(min(room.left, int(request.target_tokens * ITEMS_SHARE)))
    granted = items.left
    _fill_items(queues, picked, items)
    room.left -= granted - items.left
    # Recent turns only while the summary stays under its share of the conversation.
    used = request.target_tokens - room.left
    turns_room = _Room(min(room.left, int(_conversation_tokens(request) * MAX_SHARE_OF_CONVERSATION) - used))
    granted = turns_room.left
    recent = _recent_turns(_turns(list(request.entries)), turns_room) if granted > 0 else []
    room.left -= max(0, granted - turns_room.left)
    _fill_items(queues, picked, room)
    if not any(picked.values()) and not latest and not recent:
        raise SummarizerError("nothing to keep: the entries carry no text")
    chosen = {key: list(reversed(items)) for key, items in picked.items()}
    return _render(chosen.pop("names"), chosen, recent, latest)


class ExtractiveSummarizer:
    name = "extractive"

    async def summarize(self, request: SummaryRequest) -> str:
        return await asyncio.to_thread(summarize_blocking, request)
