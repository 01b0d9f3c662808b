"""What the provider-wide tests must know of one provider's bodies, found per provider.

The tests that run over every provider (the golden bodies, caching, generated sessions, ...)
read a provider's models, conversation rules, SDK request types and where its body carries call
ids, a temperature and reasoning from its `Conformance`. Each provider declares its own as
`CONFORMANCE` in the `conformance` module of its tests folder, named after its renderer module
(providers/apis/bedrock.py: tests/providers/bedrock/conformance.py), so adding one edits no list
here: every provider the spec registry (providers/specs.py) holds must have one.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from pioneer_grpc.providers.spec import ProviderSpec
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2

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
    # The conversation rules in their strictest reading (raises on a violation), and bodies
    # written by hand that each break one of them: (rule id, body).
    strict: Callable[[Body], None]
    broken: tuple[tuple[str, Body], ...]
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
    # The model the shared cases (tests/providers/cases.py: golden bodies, caching) render for.
    case_model: str
    # The text block the stable half of the system text is sent in.
    stable_block: Callable[[Body], Any]
    # Sends a body through the provider's official SDK to a loopback server (base URL, body, model).
    sdk_send: Callable[[str, Body, str], None]
    # What the SDK put on the wire, in the body's terms (what the SDK adds or spells its own way
    # undone: the provider's tests say exactly what).
    wire_as_body: Callable[[Any, Body], Any] = lambda wire, body: wire
    # The notices (code, field) of its render of the case `tool_result_media` (tests/providers/cases.py):
    # what of the tool results it cannot carry as given.
    tool_result_media_notices: tuple[tuple[str, str], ...] = ()
    # Cases of tests/providers/cases.py the provider refuses (their golden file holds the refusal).
    refused_cases: frozenset[str] = frozenset()


OPENAI_MODELS = (
    Model("gpt-4o", False),
    Model("gpt-4.1-2025-04-14", False),
    Model("o3", True, temperature=False),
    Model("gpt-5-mini", True, temperature=False),
    Model("gpt-4-0613", False, media=False),
    Model("house-model-7", True, notice="unknown_model"),
)


def is_on(reasoning: chat_pb2.Reasoning) -> bool:
    return bool(reasoning.effort or reasoning.HasField("budget_tokens"))


def openai_reasoning(body: Body, reasoning: chat_pb2.Reasoning) -> bool:
    sent = "reasoning_effort" in body or "reasoning" in body
    return is_on(reasoning) and sent and not reasoning.HasField("budget_tokens")


def openai_callable(body: Body) -> bool:
    return bool(body.get("tools")) and body.get("tool_choice") != "none"


def openai_forced(body: Body) -> bool:
    choice = body.get("tool_choice")
    return choice == "required" or isinstance(choice, dict)


def tests_of(spec: ProviderSpec) -> str:
    """The module declaring the Conformance of the provider whose renderer module holds `spec`:
    tests/providers/<renderer module>/conformance.py."""
    return f"tests.providers.{spec.render.__module__.rsplit('.', 1)[-1]}.conformance"


def conformances_of(specs: Mapping[int, ProviderSpec]) -> dict[int, Conformance]:
    """The Conformance of every provider of `specs`, by Provider value, in their order (a KeyError
    names a provider whose tests declare none)."""
    found: dict[int, Conformance] = {}
    for provider, spec in specs.items():
        try:
            module = importlib.import_module(tests_of(spec))
        except ModuleNotFoundError as missing:
            raise KeyError(f"{spec.name} has no {tests_of(spec)}") from missing
        declared = getattr(module, "CONFORMANCE", None)
        if declared is None:
            raise KeyError(f"{tests_of(spec)} declares no CONFORMANCE for {spec.name}")
        assert declared.provider == provider, (declared.provider, provider)
        found[provider] = declared
    return found


@cache
def conformances() -> dict[int, Conformance]:
    """Every registered provider's Conformance (providers/specs.py SPECS), by Provider value."""
    return conformances_of(SPECS)
