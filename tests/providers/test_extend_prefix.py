"""A rendered prefix extended turn by turn is the prefix rendered from scratch, for every provider.

Generated agent sessions (the generator of test_generated_sessions: tool calls
numbered from call_0 every turn, interrupted calls, media in results and from the
user, error marks, participant names, mid-session system messages) are cut at each
turn's end. The prefix of the first cut is rendered; each later cut's is the
previous one extended with the turn's messages, and must equal `render_prefix` of
the whole conversation so far: the rendered messages (as JSON text too), the
notices of each stage, the pairing, the call ids' uses, the tools called. Where
the turn may not follow (it starts with an assistant or a system message, so a
merge could reach across) the extension is None and the whole is rendered.
"""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from typing import Any

import pytest
from google.protobuf import json_format

from pioneer_grpc.providers.conversation import RenderedPrefix
from pioneer_grpc.providers.prefix import extend_prefix, render_prefix
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.test_generated_sessions import SEED, Writer, _turn

P = provider_service_pb2
PROVIDERS = sorted(SPECS)
SESSIONS = 120


def _conversation(number: int) -> tuple[list[chat_pb2.ChatMessage], list[int]]:
    """A session's messages and where each of its turns ends."""
    rng = random.Random(SEED * 7_000_003 + number)
    w = Writer(rng, number)
    messages: list[dict[str, Any]] = []
    if rng.random() < 0.3:
        messages.append({"role": "CHAT_ROLE_SYSTEM", "content": f"Be brief. {w.token()}"})
    ends: list[int] = []
    turns = rng.randint(3, 7)
    for turn in range(turns):
        if turn and rng.random() < 0.12:
            # A turn that starts with the assistant (a continuation): Gemini and Bedrock merge it
            # with an assistant message ending the turn before.
            messages.append({"role": "CHAT_ROLE_ASSISTANT", "content": f"Also {w.token()}"})
        _turn(w, messages, turn, turn == turns - 1)
        ends.append(len(messages))
    request = json_format.ParseDict({"messages": messages}, chat_pb2.ChatRequest())
    return list(request.messages), ends


def _same(extended: RenderedPrefix, whole: RenderedPrefix) -> None:
    assert json.dumps(extended.rendered) == json.dumps(whole.rendered)
    assert extended.call_name_notices == whole.call_name_notices
    assert extended.call_id_notices == whole.call_id_notices
    assert extended.message_notices == whole.message_notices
    assert extended.pairing == whole.pairing
    assert extended.call_id_uses == whole.call_id_uses
    assert extended == whole


@pytest.mark.parametrize("provider", PROVIDERS, ids=[SPECS[p].name for p in PROVIDERS])
def test_a_prefix_extended_turn_by_turn_is_the_prefix_rendered_whole(provider: int) -> None:
    seen: Counter[str] = Counter()
    for number in range(SESSIONS):
        messages, ends = _conversation(number * len(PROVIDERS) + provider)
        prefix = render_prefix(provider, messages[: ends[0]])
        for start, end in itertools.pairwise(ends):
            whole = render_prefix(provider, messages[:end])
            extended = extend_prefix(provider, prefix, messages[start:end]) if prefix is not None else None
            where = f"session {number}, messages [{start}:{end}] for {SPECS[provider].name}"
            first = messages[start].role
            if prefix is None:
                seen["no prefix to extend"] += 1
            elif first != chat_pb2.CHAT_ROLE_USER:
                assert extended is None, where
                seen["assistant first" if first == chat_pb2.CHAT_ROLE_ASSISTANT else "system first"] += 1
            elif whole is None:
                assert extended is None, where  # an open call at the end, a rule broken
                seen["no prefix"] += 1
            else:
                assert extended is not None, where
                _same(extended, whole)
                seen["extended"] += 1
                if extended.call_id_notices:
                    seen["call ids rewritten"] += 1
                if extended.message_notices:
                    seen["message notices"] += 1
                if extended.has_results:
                    seen["tool results"] += 1
            # As the kept answer does: the extension, else the render from scratch.
            prefix = extended if extended is not None else whole
    if SPECS[provider].render_messages is None:
        assert seen["extended"] == 0
        return
    assert seen["extended"] >= 200, seen
    for case in ("assistant first", "system first", "no prefix to extend", "tool results"):
        assert seen[case] >= 3, (case, seen)


@pytest.mark.parametrize(
    "provider", [p for p in PROVIDERS if SPECS[p].render_messages is not None], ids=lambda p: SPECS[p].name
)
def test_an_extension_changes_no_prefix(provider: int) -> None:
    messages, ends = _conversation(3)
    prefix = render_prefix(provider, messages[: ends[0]])
    assert prefix is not None
    before = json.dumps(prefix.rendered)
    for start, end in itertools.pairwise(ends):
        extend_prefix(provider, prefix, messages[start:end])
    assert json.dumps(prefix.rendered) == before
    # Another provider's or path's prefix is not extended.
    other = next(p for p in PROVIDERS if p != provider)
    tail = messages[ends[0] : ends[1]]
    assert extend_prefix(other, prefix, tail) is None
    assert extend_prefix(provider, prefix, tail, path="other") is None
    assert extend_prefix(provider, prefix, []) is None


def _messages(*messages: dict[str, Any]) -> list[chat_pb2.ChatMessage]:
    return list(json_format.ParseDict({"messages": list(messages)}, chat_pb2.ChatRequest()).messages)


USER = {"role": "CHAT_ROLE_USER", "content": "Go on."}
ANSWER = {"role": "CHAT_ROLE_ASSISTANT", "content": "Done."}
CALL = {
    "role": "CHAT_ROLE_ASSISTANT",
    "toolCalls": [{"id": "call_0", "name": "run_tests", "arguments": "{}"}],
}
RESULT = {"role": "CHAT_ROLE_TOOL", "toolCallId": "call_0", "content": "ok"}


@pytest.mark.parametrize(
    "provider", [p for p in PROVIDERS if SPECS[p].render_messages is not None], ids=lambda p: SPECS[p].name
)
def test_where_the_boundary_does_not_hold_nothing_is_extended(provider: int) -> None:
    history = _messages(USER, CALL, RESULT, ANSWER)
    prefix = render_prefix(provider, history)
    assert prefix is not None
    # The new part starts with an assistant message: Gemini and Bedrock send it in one turn with
    # the answer before it, which a prefix cannot take back.
    tail = _messages({"role": "CHAT_ROLE_ASSISTANT", "content": "Also this."}, USER)
    assert extend_prefix(provider, prefix, tail) is None
    whole = render_prefix(provider, [*history, *tail])
    assert whole is not None
    if provider in (P.PROVIDER_GEMINI_GENERATE_CONTENT, P.PROVIDER_AMAZON_BEDROCK_CONVERSE):
        assert len(whole.rendered) == len(prefix.rendered) + 1  # merged across the boundary
    # A call left open at the end of the new part: whether it gets an answer depends on what follows.
    assert extend_prefix(provider, prefix, _messages(USER, CALL)) is None
    assert render_prefix(provider, [*history, *_messages(USER, CALL)]) is None
    # A result that answers a call of the prefix is a rule broken: the whole names it.
    assert extend_prefix(provider, prefix, _messages(USER, RESULT)) is None
    # A history with a call left open at its end is no prefix at all.
    assert render_prefix(provider, _messages(USER, CALL)) is None
    # A system message first: only a user message continues a prefix (prefix.continues).
    assert (
        extend_prefix(provider, prefix, _messages({"role": "CHAT_ROLE_SYSTEM", "content": "Terse."}, USER))
        is None
    )
