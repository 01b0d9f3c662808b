"""A body rendered after a kept prefix is written in parts, the prefix's messages' JSON written once
and shared by the rounds after it (providers/prefix_json.py); joined, it is byte for byte the body
written whole."""

from __future__ import annotations

from typing import Any

import pytest

from pioneer_grpc.providers import prefix_json
from pioneer_grpc.providers.common import encoded_body
from pioneer_grpc.providers.prefix import extend_prefix, render_prefix
from pioneer_grpc.providers.render import render, render_after
from pioneer_grpc.v1 import provider_service_pb2
from tests.providers.test_render_after import HISTORY, ROUNDS, assistant, chat, result, user

P = provider_service_pb2
PROVIDERS = {
    "anthropic": P.PROVIDER_ANTHROPIC_MESSAGES,
    "openai-chat": P.PROVIDER_OPENAI_CHAT_COMPLETIONS,
    "gemini": P.PROVIDER_GEMINI_GENERATE_CONTENT,
}
TURN = [user("Weather in Faro?"), assistant("", ("call_5", "get_weather")), result("call_5")]


def _round(
    provider: int, prefix: Any, history: list[dict[str, Any]], tail: list[dict[str, Any]], fields: Any
) -> tuple[Any, bytes]:
    """The round's body rendered after `prefix`, and the whole conversation's body from scratch."""
    whole = chat(provider, history + tail, fields)
    own = chat(provider, tail, fields)
    body = render_after(prefix, provider, own, lambda: whole, source_bytes=whole.ByteSize())
    return body, render(provider, whole, capped_parts=True).body


@pytest.mark.parametrize("fields", list(ROUNDS.values()), ids=list(ROUNDS))
@pytest.mark.parametrize("provider", list(PROVIDERS.values()), ids=list(PROVIDERS))
def test_rounds_after_a_prefix_and_after_its_extension_are_the_bodies_written_whole(provider, fields):
    prefix = render_prefix(provider, list(chat(provider, HISTORY, {}).messages))
    assert prefix is not None
    first, scratch = _round(provider, prefix, HISTORY, [user("And now?")], fields)
    assert first.prefix is prefix
    written = first.written()
    assert b"".join(written.parts) == written.body == scratch == encoded_body(first.body)
    assert first.encoded().body == scratch and written.size == len(scratch)
    kept = prefix_json._kept.get(prefix)
    assert kept is not None and len(kept) == 1 and written.parts[1] is kept[0]  # written once, kept
    second, scratch = _round(provider, prefix, HISTORY, TURN, fields)
    parts = second.written().parts
    assert b"".join(parts) == scratch
    assert parts[1] is kept[0]  # shared by the next round, not written again

    # After a completed turn: the kept history extended by the turn, its parts extended too.
    extended = extend_prefix(provider, prefix, list(chat(provider, TURN, {}).messages))
    assert extended is not None
    after, scratch = _round(provider, extended, HISTORY + TURN, [user("Thanks.")], fields)
    parts = after.written().parts
    assert b"".join(parts) == scratch
    assert parts[1] is kept[0] and len(parts) == 4 and parts[2].startswith(b",{")


@pytest.mark.parametrize("provider", list(PROVIDERS.values()), ids=list(PROVIDERS))
def test_a_message_quoting_the_marker_is_written_as_it_is(provider):
    prefix = render_prefix(provider, list(chat(provider, HISTORY, {}).messages))
    body, scratch = _round(provider, prefix, HISTORY, [user(prefix_json._MARKER)], {})
    written = body.written()
    assert written.parts == (scratch,)  # written whole
    assert scratch.count(prefix_json._MARKER.encode()) == 1


def test_the_kept_json_is_bounded_and_forgets_prefixes_gone():
    kept = prefix_json._Kept(max_bytes=4000)
    provider = P.PROVIDER_OPENAI_CHAT_COMPLETIONS
    prefixes = [render_prefix(provider, list(chat(provider, [user(text)], {}).messages)) for text in "ab"]
    for i, prefix in enumerate(prefixes * 3):
        kept.put(prefix, (b"x" * 500, b"x" * (400 + i)))
    assert kept._bytes <= 4000
    assert all(kept.get(prefix) == (b"x" * 500, b"x" * (404 + i)) for i, prefix in enumerate(prefixes))
    del prefix
    del prefixes[0]
    kept.put(prefixes[0], (b"y",))
    assert len(kept._items) == 1 and kept._bytes == 1
