"""The breakpoint decision on its own: where the minimum is met, and which blocks carry the anchors."""

from __future__ import annotations

from pioneer_grpc.history.tokens import count_blocking
from pioneer_grpc.providers.cache_points import CacheMinimum, conversation_anchors, reached


def _pieces(*texts: str):
    return (((2, i, 0), text) for i, text in enumerate(texts))


def test_the_minimum_in_characters_is_met_at_the_piece_that_reaches_it():
    minimum = CacheMinimum(chars=10)
    assert reached(minimum, _pieces("abcd", "efgh", "ij", "k")) == (2, 2, 0)
    assert reached(minimum, _pieces("abcd", "efgh")) is None
    assert reached(CacheMinimum(chars=0), _pieces("a")) == (2, 0, 0)


def test_the_minimum_in_tokens_counts_each_piece_in_the_models_tokenizer():
    text = "word " * 400
    [tokens] = count_blocking([text], "claude_estimate")
    at = CacheMinimum(tokens=tokens * 2, tokenizer="claude_estimate")
    assert reached(at, _pieces(text, text, text)) == (2, 1, 0)
    over = CacheMinimum(tokens=tokens * 2 + 1, tokenizer="claude_estimate")
    assert reached(over, _pieces(text, text, text)) == (2, 2, 0)
    # A piece far larger than the minimum is counted a chunk at a time, only as far as needed.
    huge = "token " * 100_000
    assert CacheMinimum(tokens=1_024, tokenizer="cl100k_base").count(huge, 1_024) < 30_000


def _message(role: str, *kinds: str) -> dict:
    return {"role": role, "content": [{"type": kind} for kind in kinds]}


def _takes(block: dict) -> bool:
    return block["type"] != "thinking"


def test_the_anchors_are_the_newest_user_turn_and_the_one_before_the_newest_answer():
    messages = [
        _message("user", "text"),
        _message("assistant", "text", "tool_use"),
        _message("user", "tool_result", "tool_result"),
        _message("assistant", "tool_use"),
        _message("user", "tool_result"),
    ]
    assert conversation_anchors(messages, _takes) == [(2, 1), (4, 0)]
    # A first turn: the newest user message only.
    assert conversation_anchors(messages[:1], _takes) == [(0, 0)]
    # Ending with an assistant message (a prefill): the user turns before it.
    assert conversation_anchors([*messages, _message("assistant", "text")], _takes) == [(2, 1), (4, 0)]
    # A block that takes no breakpoint is passed over for the one before it.
    assert conversation_anchors([_message("user", "text", "thinking")], _takes) == [(0, 0)]
    assert conversation_anchors([{"role": "assistant", "content": "hi"}], _takes) == []
