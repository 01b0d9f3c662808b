"""render_after takes every argument render takes, whether it renders after the prefix or the whole
conversation: options, the caller's field paths, the registry, capped parts."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.models.registry import Registry
from pioneer_grpc.providers.prefix import render_prefix
from pioneer_grpc.providers.render import RenderedRequest, render, render_after, render_body
from pioneer_grpc.v1 import provider_service_pb2
from tests.providers.test_render_after import HISTORY, ROUNDS, assistant, chat, result, user

P = provider_service_pb2
OPENAI = P.PROVIDER_OPENAI_CHAT_COMPLETIONS
ANTHROPIC = P.PROVIDER_ANTHROPIC_MESSAGES
COMPILED = ROUNDS["tools and a compiled prompt"]
# A round that starts with a user message follows the prefix; one that starts otherwise is rendered whole.
TAILS = {
    "after the prefix": [user("Thanks. What next?")],
    "whole": [assistant("Also:", ("call_8", "get_weather")), result("call_8")],
}


def after_and_scratch(
    provider: int, tail: list[dict[str, Any]], fields: dict[str, Any], **kwargs: Any
) -> tuple[RenderedRequest | list[Any], RenderedRequest | list[Any]]:
    """(render_after, render of the whole), each a RenderedRequest or the violations it raised."""
    whole = chat(provider, HISTORY + tail, fields)
    # Rendered under the caller's path: a prefix under another path is not continued.
    prefix = render_prefix(
        provider, list(chat(provider, HISTORY, {}).messages), kwargs.get("path", "chat_request")
    )
    assert prefix is not None
    try:
        after: RenderedRequest | list[Any] = render_after(
            prefix,
            provider,
            chat(provider, tail, fields),
            lambda: whole,
            source_bytes=whole.ByteSize(),
            **kwargs,
        ).encoded()
    except InvalidArgument as exc:
        after = exc.violations
    try:
        scratch: RenderedRequest | list[Any] = render(provider, whole, capped_parts=True, **kwargs)
    except InvalidArgument as exc:
        scratch = exc.violations
    return after, scratch


@pytest.mark.parametrize("tail", list(TAILS))
def test_render_options_reach_the_body(tail: str) -> None:
    options = P.RenderOptions(cache_key_prefix="team-a:")
    after, scratch = after_and_scratch(OPENAI, TAILS[tail], COMPILED, options=options)
    assert after == scratch
    assert isinstance(after, RenderedRequest)
    assert json_format.json.loads(after.body)["prompt_cache_key"].startswith("team-a:")


@pytest.mark.parametrize("tail", list(TAILS))
def test_the_cache_minimum_decides_the_anthropic_breakpoints(tail: str) -> None:
    bodies = {}
    for chars in (0, 10**9):
        options = P.RenderOptions(anthropic_min_cache_chars=chars)
        after, scratch = after_and_scratch(ANTHROPIC, TAILS[tail], COMPILED, options=options)
        assert after == scratch
        assert isinstance(after, RenderedRequest)
        bodies[chars] = after
    assert bodies[0].cache_breakpoints == 4
    assert bodies[10**9].cache_breakpoints == 0


@pytest.mark.parametrize("provider", [OPENAI, ANTHROPIC])
@pytest.mark.parametrize("tail", list(TAILS))
def test_the_dynamic_placement_reaches_the_body(provider: int, tail: str) -> None:
    for placement in (1, 2):
        options = P.RenderOptions(dynamic_context_placement=placement)  # type: ignore[arg-type]
        after, scratch = after_and_scratch(provider, TAILS[tail], COMPILED, options=options)
        assert after == scratch


@pytest.mark.parametrize("tail", list(TAILS))
def test_violations_are_named_under_the_callers_paths(tail: str) -> None:
    options = P.RenderOptions(cache_key_prefix="no spaces allowed")
    after, scratch = after_and_scratch(
        OPENAI, TAILS[tail], {}, options=options, path="turn.chat", options_path="turn.render_options"
    )
    assert after == scratch
    assert [v.field for v in after] == ["turn.render_options.cache_key_prefix"]  # type: ignore[union-attr]
    bad = [user("x"), assistant("", ("call_9", "get_weather")), user("y"), result("call_9")]
    after, scratch = after_and_scratch(OPENAI, bad, {}, path="turn.chat")
    assert after == scratch
    assert after
    assert all(v.field.startswith("turn.chat.messages[") for v in after)  # type: ignore[union-attr]


@pytest.mark.parametrize("tail", list(TAILS))
def test_the_callers_registry_decides_what_the_model_takes(tail: str) -> None:
    empty = Registry(models={})
    after, scratch = after_and_scratch(OPENAI, TAILS[tail], {}, models=empty)
    assert after == scratch
    packaged, _ = after_and_scratch(OPENAI, TAILS[tail], {})
    assert isinstance(after, RenderedRequest)
    assert isinstance(packaged, RenderedRequest)
    assert {n.code for n in after.notices} != {n.code for n in packaged.notices}


def test_the_whole_conversation_is_rendered_with_capped_parts():
    # More parts than one message may carry in a request: stored entries were checked against their own caps.
    many = user("Look.", *[{"text": f"part {i}"} for i in range(300)])
    history = [many, assistant("Seen.")]
    whole = chat(OPENAI, [*history, assistant("More:")], {})
    with pytest.raises(InvalidArgument):
        render(OPENAI, whole)
    expected = render(OPENAI, whole, capped_parts=True)
    prefix = render_prefix(OPENAI, list(chat(OPENAI, history, {}).messages))
    got = render_after(
        prefix, OPENAI, chat(OPENAI, [assistant("More:")], {}), lambda: whole, source_bytes=whole.ByteSize()
    ).encoded()
    assert got == expected


def test_render_body_is_the_rendered_body_as_a_dict():
    request = chat(ANTHROPIC, [*HISTORY, user("Next?")], COMPILED)
    body, breakpoints = render_body(ANTHROPIC, request)
    rendered = render(ANTHROPIC, request)
    assert body == json_format.json.loads(rendered.body)
    assert list(body) == list(json_format.json.loads(rendered.body))
    assert breakpoints == rendered.cache_breakpoints
    with pytest.raises(InvalidArgument) as refused:
        render_body(ANTHROPIC, request, P.RenderOptions(anthropic_min_cache_chars=-1), options_path="o")
    assert [v.field for v in refused.value.violations] == ["o.anthropic_min_cache_chars"]
    request.tools[0].name = "bad name!"
    with pytest.raises(InvalidArgument) as named:
        render_body(ANTHROPIC, request, path="req")
    assert [v.field for v in named.value.violations] == ["req.tools[0].name"]


def test_notices_after_the_prefix_are_named_under_the_callers_path():
    after, scratch = after_and_scratch(
        ANTHROPIC, TAILS["after the prefix"], {"temperature": 0.3}, path="turn.chat"
    )
    assert after == scratch
    assert isinstance(after, RenderedRequest)
    assert "turn.chat.temperature" in {n.field for n in after.notices}


def test_default_paths_name_the_request_and_the_options():
    options = P.RenderOptions(cache_key_prefix="no spaces allowed")
    after, _ = after_and_scratch(OPENAI, TAILS["after the prefix"], {}, options=options)
    assert [v.field for v in after] == ["options.cache_key_prefix"]  # type: ignore[union-attr]
    request = chat(ANTHROPIC, [*HISTORY, user("Next?")], COMPILED)
    request.tools[0].name = "bad name!"
    with pytest.raises(InvalidArgument) as named:
        render_body(ANTHROPIC, request)
    assert [v.field for v in named.value.violations] == ["chat_request.tools[0].name"]
    with pytest.raises(InvalidArgument) as refused:
        render_body(OPENAI, chat(OPENAI, [user("x")], {}), options)
    assert [v.field for v in refused.value.violations] == ["options.cache_key_prefix"]


def test_render_body_checks_every_cap_of_a_request():
    many = chat(OPENAI, [user("Look.", *[{"text": f"part {i}"} for i in range(300)])], {})
    with pytest.raises(InvalidArgument):
        render_body(OPENAI, many)
