"""Each provider's documented prompt-caching rules, applied to the bodies of one thread's rounds.

A body is cut into its blocks in the order the provider caches them (tool definitions, system text,
then the conversation's blocks or messages). A block's size is the tokens of its JSON in the model's
tokenizer (history/tokens.py; the registry names it), and a prefix is identified by a running digest
of its blocks, so "this prefix was cached" is exact at block granularity. The rules, from the
providers' documentation (the registry's [sources]):

- Anthropic Messages, and Bedrock Converse for the Claude models behind it: a breakpoint (a
  `cache_control` key, a `cachePoint` block) caches the prefix that ends with its block, when that
  prefix holds at least the model's minimum (registry cache_min_tokens). A request reads the
  longest cached prefix ending at one of its breakpoints or at one of the 20 blocks before each.
  What lies between the read prefix and the last breakpoint is written (billed at the write price),
  what follows the last breakpoint is plain input. Markers are not part of a prefix: moving a
  breakpoint does not change what the earlier prefixes were.
- OpenAI (Chat Completions and Responses): automatic; a prompt of 1,024 tokens or more reads the
  longest prefix it shares with a prompt sent before under the same prompt_cache_key, counted in
  steps of 128 tokens from 1,024. Writes cost the input price.
- Gemini: implicit caching; a request reads the longest prefix it shares with one sent before, when
  it holds at least the model's minimum (2,048 tokens for 2.5 Flash and Pro). Writes cost the input
  price.

Every earlier round of the thread is taken to be still cached (an agent loop's rounds follow each
other within the 5-minute lifetime of Anthropic's cache, which each read refreshes). Images and
documents cost their JSON here (none in the loops measured).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from pioneer_grpc.history.tokens import count_blocking
from pioneer_grpc.models.registry import ModelInfo, Prices
from pioneer_grpc.v1 import provider_service_pb2

P = provider_service_pb2
LOOKBACK_BLOCKS = 20
OPENAI_MINIMUM, OPENAI_STEP = 1024, 128


@dataclass(frozen=True)
class PathRound:
    """One round's input tokens: in all, read from the cache, written to it; and their cost in USD."""

    total: int
    read: int
    write: int
    cost: float
    all_cached_cost: float


@dataclass(frozen=True)
class Block:
    digest: bytes
    tokens: int
    breakpoint: bool


def _json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


class Counter:
    """Tokens of a block's JSON in one tokenizer, counted once per distinct block."""

    def __init__(self, tokenizer: str) -> None:
        self.tokenizer = tokenizer
        self.counts: dict[bytes, int] = {}

    def block(self, value: Any, breakpoint: bool = False) -> Block:
        text = _json(value)
        digest = hashlib.blake2b(text, digest_size=16).digest()
        tokens = self.counts.get(digest)
        if tokens is None:
            [tokens] = count_blocking([text.decode()], self.tokenizer)
            self.counts[digest] = tokens
        return Block(digest, tokens, breakpoint)


def _without(value: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k != key}


def anthropic_blocks(body: dict[str, Any], count: Counter) -> list[Block]:
    out = [count.block(_without(t, "cache_control"), "cache_control" in t) for t in body.get("tools", [])]
    out += [count.block(_without(b, "cache_control"), "cache_control" in b) for b in body.get("system", [])]
    for message in body["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for j, block in enumerate(blocks):
            # A message's first block carries its role: the same text in another role is another prefix.
            key = {"role": message["role"], **block} if j == 0 else block
            out.append(count.block(_without(key, "cache_control"), "cache_control" in block))
    return out


def _marked(items: list[Any], count: Counter, role: str | None = None) -> list[Block]:
    """Bedrock's lists: a cachePoint block marks the block before it."""
    out: list[Block] = []
    first = True
    for item in items:
        if "cachePoint" in item:
            if out:
                out[-1] = Block(out[-1].digest, out[-1].tokens, True)
            continue
        key = {"role": role, **item} if role is not None and first else item
        first = False
        out.append(count.block(key))
    return out


def bedrock_blocks(body: dict[str, Any], count: Counter) -> list[Block]:
    out = _marked(body.get("toolConfig", {}).get("tools", []), count)
    out += _marked(body.get("system", []), count)
    for message in body["messages"]:
        out += _marked(message["content"], count, message["role"])
    return out


def openai_blocks(body: dict[str, Any], count: Counter) -> list[Block]:
    items = body.get("messages", body.get("input", []))
    return [count.block(t) for t in body.get("tools", [])] + [count.block(m) for m in items]


def gemini_blocks(body: dict[str, Any], count: Counter) -> list[Block]:
    out = [count.block(p) for p in body.get("systemInstruction", {}).get("parts", [])]
    for group in body.get("tools", []):
        out += [count.block(d) for d in group.get("functionDeclarations", [])]
    for content in body["contents"]:
        for j, part in enumerate(content["parts"]):
            out.append(count.block({"role": content["role"], **part} if j == 0 else part))
    return out


def _prefixes(blocks: list[Block]) -> tuple[list[bytes], list[int]]:
    """The running digest and token count of every prefix that ends with a block."""
    digests, totals = [], []
    digest, total = b"", 0
    for block in blocks:
        digest = hashlib.blake2b(digest + block.digest, digest_size=16).digest()
        total += block.tokens
        digests.append(digest)
        totals.append(total)
    return digests, totals


class ExplicitCache:
    """Anthropic's breakpoints (and Bedrock's cache points, for Claude)."""

    def __init__(self, minimum: int) -> None:
        self.minimum = minimum
        self.cached: set[bytes] = set()

    def round(self, blocks: list[Block]) -> tuple[int, int, int]:
        digests, totals = _prefixes(blocks)
        marks = [i for i, block in enumerate(blocks) if block.breakpoint]
        read_at = -1
        for mark in marks:
            for position in range(mark, max(-1, mark - LOOKBACK_BLOCKS - 1), -1):
                if digests[position] in self.cached:
                    read_at = max(read_at, position)
                    break
        read = totals[read_at] if read_at >= 0 else 0
        write = 0
        if marks and totals[marks[-1]] >= self.minimum:
            write = max(0, totals[marks[-1]] - read)
        for mark in marks:
            if totals[mark] >= self.minimum:
                self.cached.add(digests[mark])
        return (totals[-1] if totals else 0), read, write


class PrefixCache:
    """OpenAI's automatic and Gemini's implicit caching: the longest prefix sent before."""

    def __init__(self, minimum: int, step: int = 1) -> None:
        self.minimum, self.step = minimum, step
        self.sent: set[bytes] = set()

    def round(self, blocks: list[Block]) -> tuple[int, int, int]:
        digests, totals = _prefixes(blocks)
        shared = 0
        for position in range(len(digests) - 1, -1, -1):
            if digests[position] in self.sent:
                shared = totals[position]
                break
        self.sent.update(digests)
        total = totals[-1] if totals else 0
        if total < self.minimum or shared < self.minimum:
            return total, 0, 0
        return total, self.minimum + (shared - self.minimum) // self.step * self.step, 0


BLOCKS: dict[int, Callable[[dict[str, Any], Counter], list[Block]]] = {
    P.PROVIDER_ANTHROPIC_MESSAGES: anthropic_blocks,
    P.PROVIDER_AMAZON_BEDROCK_CONVERSE: bedrock_blocks,
    P.PROVIDER_OPENAI_CHAT_COMPLETIONS: openai_blocks,
    P.PROVIDER_OPENAI_RESPONSES: openai_blocks,
    P.PROVIDER_GEMINI_GENERATE_CONTENT: gemini_blocks,
}


class PathModel:
    """One thread's rounds on one provider path: its caching rules and its model's prices."""

    def __init__(self, provider: int, info: ModelInfo) -> None:
        assert info.prices is not None, f"no prices for {info.prefix} in the registry"
        self.prices = info.prices
        self.count = Counter(info.tokenizer)
        if provider in (P.PROVIDER_ANTHROPIC_MESSAGES, P.PROVIDER_AMAZON_BEDROCK_CONVERSE):
            assert info.cache_min_tokens is not None
            self.cache: ExplicitCache | PrefixCache = ExplicitCache(info.cache_min_tokens)
        elif provider == P.PROVIDER_GEMINI_GENERATE_CONTENT:
            self.cache = PrefixCache(info.cache_min_tokens or 0)
        else:
            self.cache = PrefixCache(OPENAI_MINIMUM, OPENAI_STEP)
        self.blocks = BLOCKS[provider]

    def observe(self, body: dict[str, Any]) -> PathRound:
        total, read, write = self.cache.round(self.blocks(body, self.count))
        prices = self.prices
        return PathRound(
            total, read, write, input_cost(prices, total, read, write), total * prices.cache_read / 1e6
        )


def input_cost(prices: Prices, total: int, read: int, write: int) -> float:
    """USD for `total` input tokens of which `read` came from the cache and `write` went into it."""
    plain = max(0, total - read - write)
    return (plain * prices.input + read * prices.cache_read + write * prices.cache_write) / 1e6


def expected_round(
    provider: int,
    info: ModelInfo,
    previous: dict[str, Any] | None,
    body: dict[str, Any],
) -> PathRound:
    """What the provider's cache is expected to serve of `body`, the round after `previous`.

    Only the previous round is taken to be cached (None: nothing is): the figure a loop's reported
    usage is compared with, round by round.
    """
    model = PathModel(provider, info)
    if previous is not None:
        model.observe(previous)
    return model.observe(body)
