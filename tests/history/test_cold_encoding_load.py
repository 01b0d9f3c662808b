"""A process that has not loaded a vocabulary yet loads the same encoding as tiktoken's reference
(encodings.py, tokens.py): the cache the other tests share is emptied first."""

from __future__ import annotations

import pytest

from pioneer_grpc.history import encodings
from pioneer_grpc.history.encodings import CL100K_BASE, O200K_BASE, get_encoding, is_loaded
from pioneer_grpc.history.tokens import count_tokens, load_encoding, load_encoding_blocking
from tests.history.test_encodings import reference  # noqa: F401  (the fixture)

SAMPLE = ["hello world", "naïve café 😀", "def f(x):\n    return x ** 2\n", "<|endoftext|> ok", "1e999 NaN"]


@pytest.fixture
def cold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encodings, "_loaded", {})


@pytest.mark.parametrize("name", [O200K_BASE, CL100K_BASE])
def test_a_cold_load_equals_the_reference(name: str, reference, cold):  # noqa: F811
    assert not is_loaded(name)
    ours = get_encoding(name)
    assert is_loaded(name)
    assert get_encoding(name) is ours
    theirs = reference[name]
    assert ours.n_vocab == theirs.n_vocab
    for text in SAMPLE:
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
        assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")


async def test_an_async_load_of_a_cold_encoding_loads_it_once(cold):
    assert not is_loaded(O200K_BASE)
    loaded = await load_encoding("o200k_base")
    assert is_loaded(O200K_BASE)
    assert await load_encoding("o200k_base") is loaded
    assert load_encoding_blocking("o200k_base") is loaded
    assert loaded.name == "o200k_base"
    assert loaded.encode_ordinary("hello world") == [24912, 2375]
    assert not is_loaded(CL100K_BASE)
    assert await count_tokens(["hello world", ""]) == [2, 0]
    assert is_loaded(CL100K_BASE)
