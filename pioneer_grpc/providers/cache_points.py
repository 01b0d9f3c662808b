"""Where Anthropic and Bedrock bodies carry cache breakpoints: one decision, wherever a body is rendered.

The server, `pioneer-grpc render` and the console (which shows the bodies the server
kept) all render through here.

The providers' documented rules (Anthropic prompt caching; Bedrock Converse
`cachePoint`, the same for the Claude models behind it):
- the cached prefix runs in a fixed order: tool definitions, system text, messages;
- a request carries at most four breakpoints; each one caches the prefix that ends
  with the block it is on, and a later request reads a cached prefix when its own
  prefix up to one of its breakpoints, or up to one of the about 20 blocks before it,
  is byte for byte that one;
- a prefix shorter than the model's minimum (1,024 to 4,096 tokens by model: the
  registry's cache_min_tokens) is not cached: a breakpoint there is a wasted slot;
- text, image, document, tool use and tool result blocks take a breakpoint; thinking
  blocks do not (this server sends none).

So a body gets, each only where the prefix up to it meets the minimum:
1. the last tool definition;
2. the stable half of the system prompt;
3. the last block of the newest user turn (before the runtime context, which follows
   it: common.runtime_block), so the next round reads everything up to there;
4. the last block of the user turn before the newest assistant message: where the
   previous round's anchor 3 was, so this round reads that prefix exactly however
   many blocks the model's answer added (a lookback of 20 blocks does not reach past
   a dozen parallel tool calls and their results).
VS Code's Copilot renderer spends its four the same way (tools, system, two sliding
anchors on the conversation).

A breakpoint is a key appended last to its block (Anthropic) or a block of its own
right after it (Bedrock): adding or moving one changes no other byte of the body.
Messages a kept prefix shares between rounds are never changed: a marked message is
a copy (common.JSON dicts are never written in place once rendered).

The minimum is counted in the model's tokenizer (history/tokens.py) over the body's
pieces in cache order until it is met, each piece remembered by its text: a round
counts only what it has not counted before. A caller's `anthropic_min_cache_chars`
replaces it with a count of characters; a model the registry gives no minimum gets
DEFAULT_ANTHROPIC_MIN_CACHE_CHARS characters. Images and documents count as nothing
(their size is not in the body): the check errs towards no breakpoint.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from pioneer_grpc.history.tokens import count_blocking
from pioneer_grpc.remembered import Remembered

JSON = dict[str, Any]
# The minimum in characters where no count in tokens decides: Anthropic does not cache
# prefixes under 1,024 tokens (4,096 on some models), about 4 characters each.
DEFAULT_ANTHROPIC_MIN_CACHE_CHARS = 4096
# Anthropic and Bedrock take at most four breakpoints in a request.
MAX_BREAKPOINTS = 4

# (part, index, block): tools are part 0, system blocks part 1, messages part 2 (block: the
# block's index in the message). Ordered as the provider caches them.
Position = tuple[int, int, int]
TOOLS, SYSTEM, MESSAGES = 0, 1, 2

# Texts longer than this are counted a piece at a time, only as far as the minimum needs.
_CHUNK_CHARS = 64 * 1024
_counted: Remembered[int] = Remembered(8 * 1024 * 1024)


@dataclass(frozen=True)
class CacheMinimum:
    """The smallest prefix a breakpoint may end: `tokens` in `tokenizer`, else `chars` characters."""

    tokens: int | None = None
    tokenizer: str = ""
    chars: int = DEFAULT_ANTHROPIC_MIN_CACHE_CHARS

    def count(self, text: str, need: int) -> int:
        """The size of `text` in this minimum's unit; counted only until `need` is reached."""
        if self.tokens is None:
            return len(text)
        found = 0
        for start in range(0, len(text), _CHUNK_CHARS):
            found += _tokens(text[start : start + _CHUNK_CHARS], self.tokenizer)
            if found >= need:
                break
        return found

    @property
    def size(self) -> int:
        return self.chars if self.tokens is None else self.tokens


def _tokens(text: str, tokenizer: str) -> int:
    key = b"%s\0%s" % (tokenizer.encode(), text.encode("utf-8", "surrogatepass"))
    found = _counted.get(key)
    if found is None:
        [found] = count_blocking([text], tokenizer)
        _counted.put(key, found)
    return found


def reached(minimum: CacheMinimum, pieces: Iterator[tuple[Position, str]]) -> Position | None:
    """The first position at which the pieces so far meet the minimum; None when they never do."""
    total = 0
    for position, text in pieces:
        total += minimum.count(text, minimum.size - total)
        if total >= minimum.size:
            return position
    return None


@dataclass(frozen=True)
class Layout:
    """How one provider's body holds its blocks, and how a breakpoint is put on one."""

    # The text of a content block (what it costs), and whether it takes a breakpoint.
    block_text: Callable[[JSON], str]
    takes: Callable[[JSON], bool]
    # The message's content with a breakpoint after block `index` (a new list).
    marked: Callable[[list[JSON], int], list[JSON]]


def conversation_anchors(messages: Sequence[JSON], takes: Callable[[JSON], bool]) -> list[tuple[int, int]]:
    """(message, block) of the conversation's anchors, oldest first: the last block that takes a
    breakpoint of the newest user message, and of the user message before the newest assistant
    message before it (module doc, 3 and 4)."""
    users = [i for i, message in enumerate(messages) if message["role"] == "user"]
    if not users:
        return []
    newest = users[-1]
    assistant = next((i for i in range(newest - 1, -1, -1) if messages[i]["role"] == "assistant"), None)
    picked = [newest]
    if assistant is not None:
        earlier = [i for i in users if i < assistant]
        if earlier:
            picked.insert(0, earlier[-1])
    anchors = []
    for index in picked:
        content = messages[index]["content"]
        if not isinstance(content, list):
            continue
        block = next((j for j in range(len(content) - 1, -1, -1) if takes(content[j])), None)
        if block is not None:
            anchors.append((index, block))
    return anchors


def place(
    minimum: CacheMinimum,
    layout: Layout,
    tool_texts: Sequence[str],
    system_texts: Sequence[str],
    stable_index: int | None,
    messages: list[JSON],
) -> tuple[bool, bool, int]:
    """Puts the conversation's anchors on `messages` (replacing each marked message by a copy), and
    says whether the last tool and the stable system block (`stable_index` of the system texts)
    get theirs: (tools, stable, conversation anchors placed). The caller marks those two."""
    anchors = conversation_anchors(messages, layout.takes)

    def pieces() -> Iterator[tuple[Position, str]]:
        for i, text in enumerate(tool_texts):
            yield (TOOLS, i, 0), text
        for i, text in enumerate(system_texts):
            yield (SYSTEM, i, 0), text
        last = anchors[-1][0] if anchors else -1
        for i, message in enumerate(messages[: last + 1]):
            content = message["content"]
            blocks = content if isinstance(content, list) else [{"text": content}]
            for j, block in enumerate(blocks):
                yield (MESSAGES, i, j), layout.block_text(block)

    start = reached(minimum, pieces())
    if start is None:
        return False, False, 0
    tools = bool(tool_texts) and start <= (TOOLS, len(tool_texts) - 1, 0)
    stable = stable_index is not None and start <= (SYSTEM, stable_index, 0)
    placed = 0
    for index, block in anchors:
        if start <= (MESSAGES, index, block):
            message = messages[index]
            messages[index] = {**message, "content": layout.marked(message["content"], block)}
            placed += 1
    return tools, stable, placed


def json_text(value: Any) -> str:
    """A value as the compact JSON a tool definition or call input costs."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:  # an integer past 64 bits
        return json.dumps(value, separators=(",", ":"))
