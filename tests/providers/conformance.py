"""What the provider-wide tests must know of one provider's bodies, found per provider.

The tests that run over every provider (tests/providers/test_generated_sessions.py)
read a provider's models, conversation rules, SDK request types and where its body
carries call ids, a temperature and reasoning from its `Conformance`. The first four
providers' are here; a provider added since declares its own as `CONFORMANCE` in its
test module, named after its renderer module (providers/apis/bedrock.py:
tests/providers/test_bedrock.py), so adding one edits no list here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from pioneer_grpc.providers.spec import ProviderSpec
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.sdk_types import check_sdk_types
from tests.providers.strict import STRICT

P = provider_service_pb2
Body = dict[str, Any]


@dataclass(frozen=True)
class Model:
    id: str
    reasons: bool
    temperature: bool = True
    media: bool = True
    notice: str = ""  # unknown_model / model_family_mismatch


@dataclass(frozen=True)
class Conformance:
    provider: int
    # What generated sessions draw from: models that reason and that do not, unknown ones.
    models: tuple[Model, ...]
    # The conversation rules in their strictest reading (raises on a violation).
    strict: Callable[[Body], None]
    # The official SDK's request types (raises when they refuse the body), given the model.
    sdk_types: Callable[[Body, str], None]
    # The call ids of the body's tool calls, in order.
    call_ids: Callable[[Body], list[str]]
    temperature_sent: Callable[[Body], bool]
    # Whether the body carries `reasoning` as asked (on, off, a budget).
    reasoning_as_asked: Callable[[Body, chat_pb2.Reasoning], bool]
    # Whether the body lets the model call a tool (tools declared, and no choice that forbids it),
    # and whether it makes the model call one (a required or named choice).
    callable_tools: Callable[[Body], bool]
    forced_tool: Callable[[Body], bool]


OPENAI_MODELS = (
    Model("gpt-4o", False),
    Model("gpt-4.1-2025-04-14", False),
    Model("o3", True, temperature=False),
    Model("gpt-5-mini", True, temperature=False),
    Model("gpt-4-0613", False, media=False),
    Model("house-model-7", True, notice="unknown_model"),
)


def _sdk(provider: int) -> Callable[[Body, str], None]:
    return lambda body, model: check_sdk_types(provider, body, model)


def _is_on(reasoning: chat_pb2.Reasoning) -> bool:
    return bool(reasoning.effort or reasoning.HasField("budget_tokens"))


def _openai_reasoning(body: Body, reasoning: chat_pb2.Reasoning) -> bool:
    sent = "reasoning_effort" in body or "reasoning" in body
    return _is_on(reasoning) and sent and not reasoning.HasField("budget_tokens")


def _anthropic_call_ids(body: Body) -> list[str]:
    return [
        b["id"]
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_use"
    ]


def _gemini_reasoning(body: Body, reasoning: chat_pb2.Reasoning) -> bool:
    budget = body.get("generationConfig", {}).get("thinkingConfig", {}).get("thinkingBudget")
    return budget is not None and (budget > 0) == _is_on(reasoning)


def _openai_callable(body: Body) -> bool:
    return bool(body.get("tools")) and body.get("tool_choice") != "none"


def _openai_forced(body: Body) -> bool:
    choice = body.get("tool_choice")
    return choice == "required" or isinstance(choice, dict)


def _anthropic_callable(body: Body) -> bool:
    return bool(body.get("tools")) and body.get("tool_choice", {}).get("type") != "none"


def _gemini_calling(body: Body) -> str:
    return str(body.get("toolConfig", {}).get("functionCallingConfig", {}).get("mode", "AUTO"))


_BUILT_IN = (
    Conformance(
        P.PROVIDER_OPENAI_CHAT_COMPLETIONS,
        OPENAI_MODELS,
        STRICT[P.PROVIDER_OPENAI_CHAT_COMPLETIONS],
        _sdk(P.PROVIDER_OPENAI_CHAT_COMPLETIONS),
        lambda body: [c["id"] for m in body["messages"] for c in m.get("tool_calls", [])],
        lambda body: "temperature" in body,
        _openai_reasoning,
        _openai_callable,
        _openai_forced,
    ),
    Conformance(
        P.PROVIDER_OPENAI_RESPONSES,
        OPENAI_MODELS,
        STRICT[P.PROVIDER_OPENAI_RESPONSES],
        _sdk(P.PROVIDER_OPENAI_RESPONSES),
        lambda body: [i["call_id"] for i in body["input"] if i.get("type") == "function_call"],
        lambda body: "temperature" in body,
        _openai_reasoning,
        _openai_callable,
        _openai_forced,
    ),
    Conformance(
        P.PROVIDER_ANTHROPIC_MESSAGES,
        (
            Model("claude-3-haiku-20240307", False),
            Model("claude-sonnet-4-6", True),
            Model("claude-opus-4-1-20250805", True),
            Model("claude-next-9", True, notice="unknown_model"),
            Model("gpt-4.1-mini", False, notice="model_family_mismatch"),
        ),
        STRICT[P.PROVIDER_ANTHROPIC_MESSAGES],
        _sdk(P.PROVIDER_ANTHROPIC_MESSAGES),
        _anthropic_call_ids,
        lambda body: False,  # never sent: Anthropic's thinking takes none, and the renderer leaves it out
        lambda body, reasoning: (
            body.get("thinking", {}).get("type") == ("enabled" if _is_on(reasoning) else "disabled")
        ),
        _anthropic_callable,
        lambda body: body.get("tool_choice", {}).get("type") in ("any", "tool"),
    ),
    Conformance(
        P.PROVIDER_GEMINI_GENERATE_CONTENT,
        (
            Model("gemini-2.0-flash", False),
            Model("gemini-2.5-flash", True),
            Model("models/gemini-2.5-pro", True),
            Model("gemma-local-3", True, notice="unknown_model"),
            Model("gpt-4.1-mini", False, notice="model_family_mismatch"),
        ),
        STRICT[P.PROVIDER_GEMINI_GENERATE_CONTENT],
        _sdk(P.PROVIDER_GEMINI_GENERATE_CONTENT),
        lambda body: [
            p["functionCall"]["id"] for c in body["contents"] for p in c["parts"] if "functionCall" in p
        ],
        lambda body: "temperature" in body.get("generationConfig", {}),
        _gemini_reasoning,
        lambda body: bool(body.get("tools")) and _gemini_calling(body) != "NONE",
        lambda body: _gemini_calling(body) == "ANY",
    ),
)


def tests_of(spec: ProviderSpec) -> str:
    """The test module of the provider whose renderer module holds `spec`: test_<module>."""
    return f"tests.providers.test_{spec.render.__module__.rsplit('.', 1)[1]}"


@cache
def conformances() -> dict[int, Conformance]:
    """Every provider's Conformance, by Provider value: the built-in ones, then each other spec's
    from its test module (a KeyError names a provider that declares none)."""
    found = {c.provider: c for c in _BUILT_IN}
    for provider, spec in SPECS.items():
        if provider in found:
            continue
        declared = getattr(importlib.import_module(tests_of(spec)), "CONFORMANCE", None)
        if declared is None:
            raise KeyError(f"{tests_of(spec)} declares no CONFORMANCE for {spec.name}")
        assert declared.provider == provider, (declared.provider, provider)
        found[provider] = declared
    return found
