"""What a request's own fields (model, tools, choice, options: all but its messages and compiled
prompt) give is worked out once for those fields, and every render with them answers as if it
were the first: the messages' own violations and bodies stay theirs, in the order render names
them, whatever was rendered before with the same fields."""

from __future__ import annotations

from typing import Any

import pytest

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.models.registry import Registry
from pioneer_grpc.providers.render import RenderedRequest, render
from pioneer_grpc.v1 import provider_service_pb2
from tests.providers.test_render_after import assistant, chat, result, user

P = provider_service_pb2
OPENAI = P.PROVIDER_OPENAI_CHAT_COMPLETIONS
ANTHROPIC = P.PROVIDER_ANTHROPIC_MESSAGES


def _tool(name: str, description: str = "Looks it up.") -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }


def _answer(provider: int, messages: list[dict[str, Any]], fields: dict[str, Any], **kwargs: Any) -> Any:
    """The rendered request, or the fields of the violations render raised, in order."""
    try:
        return render(provider, chat(provider, messages, fields), **kwargs)
    except InvalidArgument as exc:
        return [v.field for v in exc.violations]


@pytest.mark.parametrize("provider", [OPENAI, ANTHROPIC])
def test_renders_with_the_same_fields_keep_their_own_messages(provider: int) -> None:
    fields = {"tools": [_tool("lookup_head_same")], "max_tokens": 300}
    rounds = [
        [user("Weather in Lisbon?")],
        [user("Weather in Lisbon?"), assistant("", ("call_1", "lookup_head_same")), result("call_1")],
        [user("And Porto?")],
    ]
    first = [_answer(provider, messages, fields) for messages in rounds]
    assert all(isinstance(answer, RenderedRequest) for answer in first)
    assert len({answer.body for answer in first}) == 3
    # Again, in another order: each the same bytes as the first time.
    for index in (2, 0, 1, 1, 0):
        assert _answer(provider, rounds[index], fields) == first[index]


def test_a_violation_of_the_fields_is_reported_each_time_among_the_messages_own() -> None:
    # A bad tool name (before the messages' own checks), max_tokens (after them, before the pairing's).
    fields = {"tools": [_tool("bad name!")], "max_tokens": 0}
    empty = [{"role": "CHAT_ROLE_USER", "content": ""}]
    orphan = [user("Hi"), result("call_unknown")]
    tools, max_tokens = "chat_request.tools[0].name", "chat_request.max_tokens"
    for _ in range(2):
        assert _answer(OPENAI, empty, fields) == [tools, "chat_request.messages[0].content", max_tokens]
        assert _answer(OPENAI, orphan, fields) == [tools, max_tokens, "chat_request.messages[1].tool_call_id"]
        assert _answer(OPENAI, [user("Hi")], fields) == [tools, max_tokens]


def test_fields_over_a_cap_are_reported_alone_each_time() -> None:
    fields = {"tools": [_tool("lookup_head_capped", description="x" * 100_000)]}
    for messages in ([user("Hi")], [user("Hi"), result("call_unknown")]):
        answer = _answer(OPENAI, messages, fields)
        assert answer == ["chat_request.tools[0].description"]


def test_the_options_and_the_paths_are_part_of_the_fields() -> None:
    fields = {"tools": [_tool("lookup_head_options")]}
    good = provider_service_pb2.RenderOptions(cache_key_prefix="app-1:")
    bad = provider_service_pb2.RenderOptions(cache_key_prefix="no spaces")
    messages = [user("Hi")]
    assert isinstance(_answer(OPENAI, messages, fields, options=good), RenderedRequest)
    assert _answer(OPENAI, messages, fields, options=bad) == ["options.cache_key_prefix"]
    assert _answer(OPENAI, messages, fields, options=bad, options_path="turn.render_options") == [
        "turn.render_options.cache_key_prefix"
    ]
    assert _answer(OPENAI, [user("Hi"), result("c")], fields, path="turn.chat") == [
        "turn.chat.messages[1].tool_call_id"
    ]
    assert isinstance(_answer(OPENAI, messages, fields, options=good), RenderedRequest)


def test_each_registry_decides_for_itself() -> None:
    fields = {"tools": [_tool("lookup_head_registry")]}
    empty = Registry(models={})
    for _ in range(2):
        unknown = _answer(OPENAI, [user("Hi")], fields, models=empty)
        known = _answer(OPENAI, [user("Hi")], fields)
        assert "unknown_model" in {n.code for n in unknown.notices}
        assert "unknown_model" not in {n.code for n in known.notices}
