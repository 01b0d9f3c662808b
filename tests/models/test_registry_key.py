"""A registry's key is its value: what a cache keeps for one registry is never the answer for another."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.models.registry import ModelInfo, Registry, ToolRule, packaged_registry
from pioneer_grpc.service.turn import _checked_request
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2, turn_service_pb2


def _info(media: frozenset[str]) -> ModelInfo:
    return ModelInfo("m-", "openai", 1000, 100, "cl100k_base", False, "", media=media)


def test_equal_registries_have_equal_keys_and_any_difference_another() -> None:
    one = Registry({"m-": _info(frozenset({"image", "file"}))})
    same = Registry({"m-": _info(frozenset({"file", "image"}))})
    assert one is not same and one.key == same.key
    assert Registry({"m-": replace(_info(frozenset({"image"})), context_window=999)}).key != one.key
    strict = Registry({"m-": _info(frozenset({"image", "file"}))}, tool_rules={"m-": ToolRule(False)})
    assert strict.key != one.key
    assert packaged_registry().key == packaged_registry().key


def _forcing_a_tool(model: str) -> turn_service_pb2.PrepareTurnRequest:
    request = turn_service_pb2.PrepareTurnRequest(
        thread_id="t", turn_id="u", model=model, provider=provider_service_pb2.PROVIDER_OPENAI_RESPONSES
    )
    request.tools.add(name="get_weather", description="the weather")
    request.tool_choice.mode = chat_pb2.TOOL_CHOICE_MODE_REQUIRED
    return request


def test_a_request_a_lenient_registry_passed_is_refused_by_a_strict_one_built_where_it_was() -> None:
    """PrepareTurn remembers request heads found clean; a registry built at the address of a freed one
    (so with its id, as CPython reuses the memory at once) must not find the freed one's answer."""
    base = packaged_registry()
    rules = {"house-": ToolRule(forced_tool_choice=False)}
    reused = 0
    for attempt in range(20):
        model = f"house-model-{attempt}"
        lenient = Registry(base.models, base.images, {})
        _checked_request(_forcing_a_tool(model), lenient)  # passes, and is remembered
        address = id(lenient)
        del lenient
        strict = Registry(base.models, base.images, rules)
        reused += id(strict) == address
        with pytest.raises(InvalidArgument) as refused:
            _checked_request(_forcing_a_tool(model), strict)
        assert [v.field for v in refused.value.violations] == ["tool_choice.mode"]
    assert reused  # the case the key guards against did happen (CPython reuses the freed memory)
