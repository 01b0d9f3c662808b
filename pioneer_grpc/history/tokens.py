"""Token counting per tokenizer, offline, off the event loop.

Exact: cl100k_base and o200k_base (pioneer_grpc.history.encodings). Estimated:
claude_estimate and gemini_estimate, a ratio over an exact base encoding
(pioneer_grpc.history.estimate). Loading an encoding takes about a second, so
it happens lazily in a worker thread; counting also runs in a worker thread
because a long text takes milliseconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import TypeVar

import tiktoken

from pioneer_grpc.history.encodings import CL100K_BASE, O200K_BASE, get_encoding, is_loaded
from pioneer_grpc.history.estimate import ESTIMATORS, estimate

# The tokenizer of a model the registry does not know (the original's).
TOKENIZER = CL100K_BASE
EXACT_TOKENIZERS = (CL100K_BASE, O200K_BASE)
TOKENIZERS = (*EXACT_TOKENIZERS, *ESTIMATORS)
# Tokens a chat message costs beyond its text (role, separators), as in the original.
MESSAGE_OVERHEAD = 4


def is_exact(tokenizer: str) -> bool:
    return tokenizer in EXACT_TOKENIZERS


def base_encoding(tokenizer: str) -> str:
    """The exact encoding a tokenizer counts with (itself, or an estimate's base)."""
    estimator = ESTIMATORS.get(tokenizer)
    return tokenizer if estimator is None else estimator.base


def count_blocking(texts: Sequence[str], tokenizer: str = TOKENIZER) -> list[int]:
    """Token counts of `texts`; special-token text such as <|endoftext|> counts as plain text.
    EncodingNotLoaded inside `with_encodings` when the encoding is not loaded yet."""
    encoding = load_encoding_blocking(tokenizer)
    counts = [len(encoding.encode_ordinary(text)) if text else 0 for text in texts]
    estimator = ESTIMATORS.get(tokenizer)
    if estimator is None:
        return counts
    return [estimate(estimator, text, count) for text, count in zip(texts, counts, strict=True)]


def load_encoding_blocking(tokenizer: str = TOKENIZER) -> tiktoken.Encoding:
    """The exact encoding behind `tokenizer`, loading it on first use. Blocks: call from a worker thread."""
    name = base_encoding(tokenizer)
    if not _may_load.get() and not is_loaded(name):
        raise EncodingNotLoaded(tokenizer)
    return get_encoding(name)


async def load_encoding(tokenizer: str = TOKENIZER) -> tiktoken.Encoding:
    name = base_encoding(tokenizer)
    if is_loaded(name):
        return get_encoding(name)
    return await asyncio.to_thread(get_encoding, name)


class EncodingNotLoaded(Exception):
    """A count on the event loop needs an encoding this process has not loaded: loading it there
    (a third of a second) would hold the event loop meanwhile. The work stops;
    `with_encodings` loads it off the event loop and runs the work again."""

    def __init__(self, tokenizer: str) -> None:
        super().__init__(f"the encoding of {tokenizer} is not loaded")
        self.tokenizer = tokenizer


# False while an attempt of `with_encodings` runs: a count that would load an encoding raises.
_may_load: ContextVar[bool] = ContextVar("pioneer_may_load_encodings", default=True)

T = TypeVar("T")


async def with_encodings(attempt: Callable[[], Awaitable[T]]) -> T:
    """`attempt()` (blocking work on the event loop: a use case's decision, service/history_load.py
    `blocking`) with no encoding loaded inside it: one it needs is loaded off the event loop once
    it raised EncodingNotLoaded, and it runs again (once per encoding at most: a loaded one stays
    loaded)."""
    for _ in EXACT_TOKENIZERS:
        try:
            return await _refusing_loads(attempt)
        except EncodingNotLoaded as missing:
            await load_encoding(missing.tokenizer)
    return await _refusing_loads(attempt)


async def _refusing_loads(attempt: Callable[[], Awaitable[T]]) -> T:
    token = _may_load.set(False)
    try:
        return await attempt()
    finally:
        _may_load.reset(token)


async def count_tokens(texts: Sequence[str], tokenizer: str = TOKENIZER) -> list[int]:
    return await asyncio.to_thread(count_blocking, list(texts), tokenizer)
