"""A rendered prefix slid turn by turn (the oldest turn off, the next one on) is the prefix
rendered from scratch, for every provider.

Generated agent sessions (test_generated_sessions' generator: interrupted calls, media in
results and from the user, error marks, participant names, mid-session system messages, an
opening system message, turns that start with the assistant) are seen through a window of
turns that moves one turn each step, as a history past the turn limit is: the oldest turn
leaves, the completed one comes. Each step's prefix is the previous one slid
(`slide_prefix`) then extended (`extend_prefix`), else rendered whole where either says
None, and must equal `render_prefix` of the window; a round after it (the user's next
message) renders to the bytes and notices of the whole request rendered from scratch.
Half the sessions number their call ids from call_0 every turn (a provider that needs ids
unique in the conversation rewrites their reuses: a slide changes those rewrites, and is
None), half give each call an id of its own.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pytest
from google.protobuf import json_format

from pioneer_grpc.providers import prefix as prefix_module
from pioneer_grpc.providers.conversation import RenderedPrefix
from pioneer_grpc.providers.prefix import cut_prefix, extend_prefix, render_prefix, slide_prefix
from pioneer_grpc.providers.render import render, render_after
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.conformance import conformances
from tests.providers.test_extend_prefix import _same
from tests.providers.test_generated_sessions import SEED, TOOLS, Writer, _turn

P = provider_service_pb2
PROVIDERS = sorted(p for p in SPECS if SPECS[p].render_messages is not None)
SESSIONS = 120
WINDOW = 3


def _session(number: int, own_ids: bool) -> tuple[list[chat_pb2.ChatMessage], int, list[int]]:
    """A session's messages, how many system messages open it, and where each turn starts
    (and, last, where the last one ends)."""
    rng = random.Random(SEED * 9_000_011 + number)
    w = Writer(rng, number)
    messages: list[dict[str, Any]] = []
    if rng.random() < 0.3:
        messages.append({"role": "CHAT_ROLE_SYSTEM", "content": f"Be brief. {w.token()}"})
    lead = len(messages)
    starts: list[int] = []
    for turn in range(rng.randint(WINDOW + 2, WINDOW + 7)):
        starts.append(len(messages))
        if turn and rng.random() < 0.1:
            messages.append({"role": "CHAT_ROLE_ASSISTANT", "content": f"Also {w.token()}"})
        _turn(w, messages, turn, False)
        if own_ids:  # ids of their own: call_<turn>_<j>
            for message in messages[starts[-1] :]:
                for call in message.get("toolCalls", ()):
                    call["id"] = f"call_{turn}_{call['id']}"
                if "toolCallId" in message:
                    message["toolCallId"] = f"call_{turn}_{message['toolCallId']}"
    starts.append(len(messages))
    request = json_format.ParseDict({"messages": messages}, chat_pb2.ChatRequest())
    return list(request.messages), lead, starts


@pytest.mark.parametrize("provider", PROVIDERS, ids=[SPECS[p].name for p in PROVIDERS])
def test_a_prefix_slid_turn_by_turn_is_the_prefix_rendered_whole(provider: int) -> None:
    seen: Counter[str] = Counter()
    for number in range(SESSIONS):
        messages, lead, starts = _session(number * len(PROVIDERS) + provider, bool(number % 2))
        head = messages[:lead]
        prefix = render_prefix(provider, head + messages[starts[0] : starts[WINDOW]])
        for first in range(1, len(starts) - WINDOW):
            gone = messages[starts[first - 1] : starts[first]]
            kept = messages[starts[first] : starts[first + WINDOW - 1]]
            added = messages[starts[first + WINDOW - 1] : starts[first + WINDOW]]
            whole = render_prefix(provider, head + kept + added)
            where = f"session {number}, turn {first} for {SPECS[provider].name}"
            slid = slide_prefix(provider, prefix, gone, kept) if prefix is not None else None
            if slid is not None:
                assert render_prefix(provider, head + kept) is not None, where
                _same(slid, render_prefix(provider, head + kept))  # type: ignore[arg-type]
                seen["slid"] += 1
                if slid.call_id_notices or slid.message_notices or slid.pairing.notices:
                    seen["slid with notices"] += 1
                if slid.media_kinds:
                    seen["slid with media"] += 1
            elif prefix is not None and render_prefix(provider, head + kept) is not None:
                seen["not slid, " + _why(provider, gone, kept)] += 1
            extended = extend_prefix(provider, slid, added) if slid is not None else None
            if extended is not None:
                assert whole is not None, where
                _same(extended, whole)
                _same_body(provider, extended, head + kept + added, number)
                seen["slid and extended"] += 1
            prefix = extended if extended is not None else whole
    assert seen["slid and extended"] >= 80, seen
    assert seen["not slid, other"] == 0, seen  # every render from scratch has its reason
    assert seen["slid with notices"] >= 10, seen
    assert seen["slid with media"] >= 10, seen
    assert seen["not slid, a turn ending on a call or result"] >= 3, seen
    assert seen["not slid, a turn starting with a system message"] >= 3, seen
    if not SPECS[provider].user_first:  # else such a window is no prefix at all
        assert seen["not slid, a turn starting with the assistant"] >= 3, seen
    if SPECS[provider].unique_call_ids:
        assert seen["not slid, a call id used again"] >= 3, seen


def _same_body(
    provider: int, prefix: RenderedPrefix, history: list[chat_pb2.ChatMessage], number: int
) -> None:
    """A round after the prefix renders the body (bytes and notices) of the whole request."""
    model = conformances()[provider].models[number % len(conformances()[provider].models)]
    own = {"model": model.id, "messages": [{"role": "CHAT_ROLE_USER", "content": f"Next {number}"}]}
    if number % 3 == 0:
        own["tools"] = TOOLS
    tail = json_format.ParseDict(own, chat_pb2.ChatRequest())
    whole = chat_pb2.ChatRequest()
    whole.CopyFrom(tail)
    del whole.messages[:]
    whole.messages.extend([*history, *tail.messages])
    after = render_after(prefix, provider, tail, lambda: whole, source_bytes=whole.ByteSize())  # type: ignore[arg-type]
    assert after.encoded() == render(provider, whole, capped_parts=True)  # type: ignore[arg-type]


def _why(provider: int, gone: list[chat_pb2.ChatMessage], kept: list[chat_pb2.ChatMessage]) -> str:
    if gone[0].role != chat_pb2.CHAT_ROLE_USER or kept[0].role != chat_pb2.CHAT_ROLE_USER:
        return (
            "a turn starting with the assistant"
            if chat_pb2.CHAT_ROLE_ASSISTANT in (gone[0].role, kept[0].role)
            else "a turn starting with a system message"
        )
    if gone[-1].role != chat_pb2.CHAT_ROLE_ASSISTANT or gone[-1].tool_calls:
        return "a turn ending on a call or result"
    ids = {c.id for m in gone for c in m.tool_calls} & {c.id for m in kept for c in m.tool_calls}
    return "a call id used again" if ids and SPECS[provider].unique_call_ids else "other"


@pytest.mark.parametrize("provider", PROVIDERS, ids=[SPECS[p].name for p in PROVIDERS])
def test_a_slide_renders_the_turn_that_leaves_alone(provider: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a slide renders is the turn that leaves (to learn what it added), never the kept ones."""
    number = 0
    while True:  # the first session whose first turn may leave
        messages, lead, starts = _session(number, True)
        head, gone, kept = (
            messages[:lead],
            messages[starts[0] : starts[1]],
            messages[starts[1] : starts[WINDOW]],
        )
        prefix = render_prefix(provider, head + gone + kept)
        if prefix is not None and slide_prefix(provider, prefix, gone, kept) is not None:
            break
        number += 1
    rendered: list[int] = []
    real = prefix_module._rendered

    def counting(provider: int, request: chat_pb2.ChatRequest, path: str, earlier: Any) -> Any:
        rendered.append(len(request.messages))
        return real(provider, request, path, earlier)

    monkeypatch.setattr(prefix_module, "_rendered", counting)
    assert gone[-1].role == chat_pb2.CHAT_ROLE_ASSISTANT and not gone[-1].tool_calls
    slid = slide_prefix(provider, prefix, gone, kept)
    assert slid is not None
    assert rendered == [len(gone)]
    assert len(kept) > len(gone)
    assert json.dumps(slid.rendered) == json.dumps(render_prefix(provider, head + kept).rendered)  # type: ignore[union-attr]


def _cleared(messages: list[chat_pb2.ChatMessage]) -> list[chat_pb2.ChatMessage]:
    """The messages with each tool result's text replaced, as a cleared history sends them."""
    out = []
    for message in messages:
        copy = chat_pb2.ChatMessage()
        copy.CopyFrom(message)
        if copy.role == chat_pb2.CHAT_ROLE_TOOL:
            copy.content = "[tool result cleared]"
        out.append(copy)
    return out


@pytest.mark.parametrize("provider", PROVIDERS, ids=[SPECS[p].name for p in PROVIDERS])
def test_a_prefix_cut_at_a_turn_and_extended_again_is_the_prefix_rendered_whole(provider: int) -> None:
    """A cleared history clears one more tool result each turn: the messages from that result's
    turn on are sent anew. The kept prefix cut before that turn (`cut_prefix`) and extended with
    the turns anew and the completed one equals the render from scratch, every time."""
    seen: Counter[str] = Counter()
    for number in range(SESSIONS):
        messages, lead, starts = _session(number * len(PROVIDERS) + provider, bool(number % 2))
        head = messages[:lead]
        for end in range(2, len(starts) - 1):
            prefix = render_prefix(provider, head + messages[starts[0] : starts[end]])
            if prefix is None:
                continue
            back = 1 + (number + end) % 2  # the turns sent anew: one or two
            if end - back < 1:
                continue
            kept = messages[starts[0] : starts[end - back]]
            removed = messages[starts[end - back] : starts[end]]
            where = f"session {number}, turns [{end - back}:{end}] for {SPECS[provider].name}"
            cut = cut_prefix(provider, prefix, removed, kept)
            scratch = render_prefix(provider, head + kept)
            if cut is None:
                if scratch is not None:
                    seen["not cut, " + _cut_why(removed, kept)] += 1
                continue
            assert scratch is not None, where
            _same(cut, scratch)
            seen["cut"] += 1
            if cut.call_id_notices or cut.message_notices or cut.pairing.notices:
                seen["cut with notices"] += 1
            anew = [*_cleared(removed), *messages[starts[end] : starts[end + 1]]]
            extended = extend_prefix(provider, cut, anew)
            whole = render_prefix(provider, head + kept + anew)
            if extended is not None:
                assert whole is not None, where
                _same(extended, whole)
                _same_body(provider, extended, head + kept + anew, number)
                seen["cut and extended"] += 1
    assert seen["cut and extended"] >= 60, seen
    assert seen["cut with notices"] >= 10, seen
    assert seen["not cut, other"] == 0, seen
    assert seen["not cut, a call id used on both sides"] >= 3, seen
    assert seen["not cut, a turn ending on a call or result"] >= 3, seen


def _cut_why(removed: list[chat_pb2.ChatMessage], kept: list[chat_pb2.ChatMessage]) -> str:
    if removed[0].role != chat_pb2.CHAT_ROLE_USER:
        return "a turn starting with the assistant or a system message"
    if kept[-1].role != chat_pb2.CHAT_ROLE_ASSISTANT or kept[-1].tool_calls:
        return "a turn ending on a call or result"
    if {c.id for m in removed for c in m.tool_calls} & {c.id for m in kept for c in m.tool_calls}:
        return "a call id used on both sides"
    return "other"
