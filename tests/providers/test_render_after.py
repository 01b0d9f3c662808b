"""A body rendered after a prefix of the conversation rendered once is the body rendered from scratch."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest
from google.protobuf import json_format

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.providers.prefix import extend_prefix, render_prefix
from pioneer_grpc.providers.render import RenderedRequest, render, render_after
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.cases import MODELS, PDF, PNG, WEATHER, compiled, dynamic_text
from tests.providers.conformance import conformances

P = provider_service_pb2
# Every registered provider, by name.
PROVIDERS = {spec.name: provider for provider, spec in SPECS.items()}


def user(text: str, *parts: dict[str, Any], refs: int = 0) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "CHAT_ROLE_USER", "content": text, "contentParts": list(parts)}
    if refs:
        message["artifactRefs"] = [
            {"artifactId": f"art_{i}", "displayName": f"notes-{i}.txt", "mimeType": "text/plain"}
            for i in range(refs)
        ]
    return message


def assistant(text: str = "", *calls: tuple[str, str]) -> dict[str, Any]:
    return {
        "role": "CHAT_ROLE_ASSISTANT",
        "content": text,
        "toolCalls": [{"id": i, "name": n, "arguments": '{"city": "Lisbon", "days": 2}'} for i, n in calls],
    }


def result(call_id: str, name: str = "", text: str = "18°C") -> dict[str, Any]:
    return {"role": "CHAT_ROLE_TOOL", "toolCallId": call_id, "name": name, "content": text}


IMAGE = {"image": {"data": base64.b64encode(PNG).decode(), "mimeType": "image/png"}}
DOCUMENT = {
    "file": {"data": base64.b64encode(PDF).decode(), "mimeType": "application/pdf", "filename": "a.pdf"}
}

# Tool pairs (parallel calls, a call name and a call id each provider rewrites), an
# interrupted call, attachments, system text, consecutive assistant messages, and an
# assistant message ending in whitespace that is not the last message.
HISTORY = [
    {"role": "CHAT_ROLE_SYSTEM", "content": "Answer briefly."},
    user("Weather in Lisbon and Porto?", IMAGE, refs=2),
    assistant("Checking.", ("call:1", "get_weather"), ("call_2", "web.search")),
    result("call:1", "get_weather"),
    result("call_2", text="Porto: 15°C"),
    assistant("Lisbon 18°C, Porto 15°C.  "),
    user("And tomorrow?"),
    assistant("", ("call_3", "get_weather")),
    user("Never mind that, read this.", DOCUMENT),
    assistant("It is a one-page PDF."),
    assistant("Anything else?", ("call_4", "get_weather")),
    result("call_4"),
    assistant("Done."),
]

TAILS = {
    "a user message": [user("Thanks. What next?")],
    "a tool loop": [user("Weather in Faro?"), assistant("", ("call_5", "get_weather")), result("call_5")],
    # Ids of the history's calls again (as models number their calls each turn).
    "call ids used again": [
        user("Again?"),
        assistant("", ("call_3", "get_weather"), ("call:1", "get_weather")),
        result("call_3"),
        result("call:1"),
    ],
    "an interrupted call at the end": [user("Faro?"), assistant("", ("call_6", "get.weather"))],
    "a final assistant message": [user("Say hi."), assistant("Hi   ")],
    "system text": [user("Go on."), {"role": "CHAT_ROLE_SYSTEM", "content": "Be terse."}],
    # Not continuable: rendered from scratch.
    "an assistant message first": [assistant("Continuing."), user("ok")],
    "a system message first": [{"role": "CHAT_ROLE_SYSTEM", "content": "Be terse."}, user("ok")],
}

ROUNDS = {
    "plain": {},
    "tools and a compiled prompt": {
        "tools": [WEATHER],
        "compiledPrompt": json_format.MessageToDict(compiled(dynamic_text())),
        "toolChoice": {"mode": "TOOL_CHOICE_MODE_AUTO"},
        "parallelToolCalls": False,
    },
    "thinking and temperature": {"reasoning": {"effort": "REASONING_EFFORT_LOW"}, "temperature": 0.3},
}


def chat(provider: int, messages: list[dict[str, Any]], fields: dict[str, Any]) -> chat_pb2.ChatRequest:
    d = {"model": MODELS[provider], "messages": messages, **fields}
    return json_format.ParseDict(d, chat_pb2.ChatRequest())


def both(
    provider: int, history: list[dict[str, Any]], tail: list[dict[str, Any]], fields: dict[str, Any]
) -> tuple[RenderedRequest, RenderedRequest, int]:
    """From scratch, after the history's prefix, and how often the latter rendered the whole."""
    whole = chat(provider, history + tail, fields)
    prefix = render_prefix(provider, list(chat(provider, history, {}).messages))
    scratch = render(provider, whole, capped_parts=True)
    asked: list[chat_pb2.ChatRequest] = []

    def whole_request() -> chat_pb2.ChatRequest:
        asked.append(whole)
        return whole

    after = render_after(
        prefix, provider, chat(provider, tail, fields), whole_request, source_bytes=whole.ByteSize()
    ).encoded()
    return scratch, after, len(asked)


@pytest.mark.parametrize("round_fields", list(ROUNDS), ids=list(ROUNDS))
@pytest.mark.parametrize("tail", list(TAILS), ids=list(TAILS))
@pytest.mark.parametrize("provider", list(PROVIDERS.values()), ids=list(PROVIDERS))
def test_the_body_after_a_rendered_prefix_is_the_body_from_scratch(
    provider: int, tail: str, round_fields: str
) -> None:
    scratch, after, wholes = both(provider, HISTORY, TAILS[tail], ROUNDS[round_fields])
    assert after.body == scratch.body
    assert after == scratch
    conformances()[provider].sdk_types(json.loads(after.body), MODELS[provider])
    # Only a round that does not start with a user message renders the whole conversation.
    assert wholes == (0 if TAILS[tail][0]["role"] == "CHAT_ROLE_USER" else 1)


@pytest.mark.parametrize("provider", list(PROVIDERS.values()), ids=list(PROVIDERS))
def test_a_prefix_renders_the_history_and_its_notices(provider: int) -> None:
    prefix = render_prefix(provider, list(chat(provider, HISTORY, {}).messages))
    assert prefix is not None
    assert prefix.size == len(HISTORY)
    codes = {
        n.code
        for n in (
            *prefix.pairing.notices,
            *prefix.call_name_notices,
            *prefix.call_id_notices,
            *prefix.message_notices,
        )
    }
    assert "interrupted_tool_call_answered" in codes
    # Gemini takes `web.search` as it is: a name of the provider's tool name characters stays.
    assert ("tool_call_name_rewritten" in codes) == (
        SPECS[provider].tool_name.fullmatch("web.search") is None
    )
    if provider == P.PROVIDER_ANTHROPIC_MESSAGES:
        assert "tool_call_id_rewritten" in codes
        # The whitespace of an assistant message that is not the last stays.
        assert {"role": "assistant", "content": "Lisbon 18°C, Porto 15°C.  "} in prefix.rendered


# Anthropic, Gemini, Bedrock: the conversation starts with a user message.
USER_FIRST = {provider for provider, spec in SPECS.items() if spec.user_first}
ALL = set(PROVIDERS.values())


@pytest.mark.parametrize(
    ("history", "refused_by"),
    [
        pytest.param(HISTORY[:3], ALL, id="ends with open calls"),
        pytest.param([assistant("Hello."), *HISTORY[1:]], USER_FIRST, id="starts with the assistant"),
        pytest.param([*HISTORY, result("call_9")], ALL, id="answers no call"),
        pytest.param(
            [user("Describe.", {"audio": {"uri": "https://example.com/a.mp3"}})], ALL, id="media refused"
        ),
    ],
)
@pytest.mark.parametrize("provider", list(PROVIDERS.values()), ids=list(PROVIDERS))
def test_a_history_that_cannot_be_a_prefix_is_rendered_whole(
    provider: int, history: list[dict[str, Any]], refused_by: set[int]
) -> None:
    prefix = render_prefix(provider, list(chat(provider, history, {}).messages))
    assert (prefix is None) == (provider in refused_by)
    tail = [user("Next?")]
    whole = chat(provider, history + tail, {})
    try:
        expected: RenderedRequest | list[Any] = render(provider, whole, capped_parts=True)
    except InvalidArgument as exc:
        expected = exc.violations
    try:
        got: RenderedRequest | list[Any] = render_after(
            prefix, provider, chat(provider, tail, {}), lambda: whole, source_bytes=whole.ByteSize()
        ).encoded()
    except InvalidArgument as exc:
        got = exc.violations
    assert got == expected


BAD_TAILS = {
    "a call id still open": [
        user("Again?"),
        assistant("", ("call_3", "get_weather"), ("call_3", "get_weather")),
        result("call_3"),
        result("call_3"),
    ],
    "a second result": [user("Again?"), result("call_4")],
    "a result after a later message": [
        user("x"),
        assistant("", ("call_7", "get_weather")),
        user("y"),
        result("call_7"),
    ],
    "an empty message": [user("x"), assistant("  ")],
}


@pytest.mark.parametrize("tail", list(BAD_TAILS), ids=list(BAD_TAILS))
@pytest.mark.parametrize("provider", list(PROVIDERS.values()), ids=list(PROVIDERS))
def test_a_violation_after_a_prefix_is_named_as_in_the_whole_conversation(provider: int, tail: str) -> None:
    whole = chat(provider, HISTORY + BAD_TAILS[tail], {})
    with pytest.raises(InvalidArgument) as scratch:
        render(provider, whole, capped_parts=True)
    prefix = render_prefix(provider, list(chat(provider, HISTORY, {}).messages))
    assert prefix is not None
    with pytest.raises(InvalidArgument) as after:
        render_after(
            prefix,
            provider,
            chat(provider, BAD_TAILS[tail], {}),
            lambda: whole,
            source_bytes=whole.ByteSize(),
        )
    assert after.value.violations == scratch.value.violations
    # Named by their index in the whole conversation, after the history's.
    indices = [int(re.search(r"messages\[(\d+)\]", v.field).group(1)) for v in after.value.violations]  # type: ignore[union-attr]
    assert indices
    assert min(indices) >= len(HISTORY)


@pytest.mark.parametrize("provider", list(PROVIDERS.values()), ids=list(PROVIDERS))
def test_a_prefix_is_never_changed_by_the_rounds_after_it(provider: int) -> None:
    prefix = render_prefix(provider, list(chat(provider, HISTORY, {}).messages))
    assert prefix is not None
    before = json_format.json.dumps(list(prefix.rendered), sort_keys=True)
    for tail in TAILS.values():
        for fields in ROUNDS.values():
            whole = chat(provider, HISTORY + tail, fields)
            render_after(
                prefix, provider, chat(provider, tail, fields), lambda w=whole: w, source_bytes=0
            ).encoded()
    assert json_format.json.dumps(list(prefix.rendered), sort_keys=True) == before


AUDIO = {
    "audio": {"data": base64.b64encode(b"RIFF memo").decode(), "mimeType": "audio/wav", "filename": "m.wav"}
}
SHOT = ("call_s", "screenshot")


def _media_result(*parts: dict[str, Any]) -> dict[str, Any]:
    return {**result("call_s", "screenshot", "Tab 1:"), "contentParts": list(parts)}


# A kept history whose first turn has media in a tool result, extended by a turn without any.
MEDIA_TURNS = {
    "an image and a document": [
        [user("Open the invoice."), assistant("", SHOT), _media_result(IMAGE, DOCUMENT), assistant("Open.")],
        [user("The total?"), assistant("120 EUR.")],
    ],
    "audio": [
        [user("Play the memo."), assistant("", SHOT), _media_result(AUDIO), assistant("Played.")],
        [user("Who spoke?"), assistant("Ana.")],
    ],
}
READS = {"gpt-4-0613": set(), "gpt-5": {"image", "file"}, "gemini-2.5-flash": {"image", "file", "audio"}}
PREFIX_PROVIDERS = [p for p in SPECS if SPECS[p].render_messages is not None]


@pytest.mark.parametrize("model", ["gpt-4-0613", "gpt-5", "gemini-2.5-flash"])
@pytest.mark.parametrize("turns", list(MEDIA_TURNS))
@pytest.mark.parametrize("provider", PREFIX_PROVIDERS, ids=[SPECS[p].name for p in PREFIX_PROVIDERS])
def test_media_of_a_kept_result_is_noticed_once_after_an_extended_prefix_as_from_scratch(
    provider: int, turns: str, model: str
) -> None:
    first, second = MEDIA_TURNS[turns]
    tail = [user("Thanks. Next?")]
    history = [*first, *second]

    def request(messages: list[dict[str, Any]]) -> chat_pb2.ChatRequest:
        return json_format.ParseDict({"model": model, "messages": messages}, chat_pb2.ChatRequest())

    whole = request(history + tail)
    try:
        scratch: RenderedRequest | list[Any] = render(provider, whole, capped_parts=True)
    except InvalidArgument as exc:
        scratch = exc.violations
    # As a server keeps it: the first turn's prefix, extended with the second turn's messages.
    kept = render_prefix(provider, list(request(first).messages))
    extended = extend_prefix(provider, kept, list(request(second).messages)) if kept else None
    assert extended == render_prefix(provider, list(request(history).messages))
    asked: list[chat_pb2.ChatRequest] = []

    def whole_request() -> chat_pb2.ChatRequest:
        asked.append(whole)
        return whole

    try:
        after: RenderedRequest | list[Any] = render_after(
            extended, provider, request(tail), whole_request, source_bytes=whole.ByteSize()
        ).encoded()
    except InvalidArgument as exc:
        after = exc.violations
    assert after == scratch
    # The prefix serves where the model reads every kind of its media (else what it does not
    # read is left out of the whole conversation, rendered again).
    spec, parts = SPECS[provider], whole.messages[2].content_parts
    kinds = {part.WhichOneof("part") for part in parts}
    assert (not asked) == (extended is not None and kinds <= READS[model])
    # Audio a model reads: Gemini takes it in the result, the others refuse it.
    refused = "audio" in kinds & READS[model] and "audio" not in spec.tool_result_media
    assert isinstance(after, list) == refused
    if not isinstance(after, RenderedRequest):
        return
    conformances()[provider].strict(json.loads(after.body))
    conformances()[provider].sdk_types(json.loads(after.body), model)
    for j, part in enumerate(parts):
        kind = part.WhichOneof("part")
        field = f"chat_request.messages[2].content_parts[{j}].{kind}"
        if kind not in READS[model]:
            expected = ["media_not_sent"]
        elif kind not in spec.tool_result_media:
            expected = ["tool_result_media_moved"]  # Chat Completions: after the results
        else:
            expected = []
        assert [n.code for n in after.notices if n.field == field] == expected, field
        sent = base64.b64encode(getattr(part, kind).data).decode() in after.body.decode()
        assert sent == (expected != ["media_not_sent"]), field
