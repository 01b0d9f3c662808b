"""What the model takes, by the registry (models/registry.py): refused, left out, or said.

- Refused (a field violation): a tool rule of the model's family it does not meet
  ([tool_rules]: a required or named tool choice, tools on Chat Completions).
- Left out of the body, with a notice: reasoning for a model without extended
  thinking, a temperature for a model that takes none, a thinking budget where the
  API takes an effort, a media part of a kind the model does not read (a line of
  text says what was there).
- Said, with a notice: a model the registry does not know (everything is sent as
  given, and its window is taken to be DEFAULT_MAX_CONTEXT_TOKENS), a model of
  another family than the API serves (gpt-4.1-mini into Anthropic).
"""

from __future__ import annotations

from dataclasses import dataclass

from pioneer_grpc.errors import FieldViolation
from pioneer_grpc.history.budget import DEFAULT_MAX_CONTEXT_TOKENS
from pioneer_grpc.models.registry import Registry, Takes
from pioneer_grpc.providers.common import media_of
from pioneer_grpc.providers.conversation import Notice
from pioneer_grpc.providers.spec import ProviderSpec
from pioneer_grpc.v1 import chat_pb2

UNKNOWN_MODEL = "unknown_model"
MODEL_FAMILY_MISMATCH = "model_family_mismatch"
REASONING_NOT_SENT = "reasoning_not_sent"
TEMPERATURE_NOT_SENT = "temperature_not_sent"
THINKING_BUDGET_NOT_SENT = "thinking_budget_not_sent"
MEDIA_NOT_SENT = "media_not_sent"
FORCING = {chat_pb2.TOOL_CHOICE_MODE_REQUIRED, chat_pb2.TOOL_CHOICE_MODE_TOOL}


@dataclass(frozen=True)
class ModelFit:
    takes: Takes
    # What of the request's own fields is sent.
    reasoning: bool
    temperature: bool
    budget: bool
    notices: tuple[Notice, ...]


def takes_for(spec: ProviderSpec, registry: Registry, model: str) -> Takes:
    """What `model` takes (the registry reads every provider's model ids alike: models/registry.py
    model_key)."""
    return registry.takes(model)


def reasoning_asked(reasoning: chat_pb2.Reasoning) -> bool:
    """Whether a request asks anything of reasoning (an unset or empty Reasoning asks nothing)."""
    return bool(reasoning.disabled or reasoning.effort or reasoning.HasField("budget_tokens"))


def takes_forced_choice(spec: ProviderSpec, takes: Takes) -> bool:
    """Whether a required or named tool choice may reach the model: never when its [tool_rules]
    entry says no; where the API forces only the models that support it (Converse), only when the
    registry says this one does (a model of the API's family, or a [tool_rules] entry)."""
    if not takes.forced_tool_choice:
        return False
    if spec.forced_choice_per_model:
        return takes.tool_rule or (takes.known and takes.family in spec.families)
    return True


def violations(
    spec: ProviderSpec, request: chat_pb2.ChatRequest, takes: Takes, path: str
) -> list[FieldViolation]:
    found: list[FieldViolation] = []
    if request.tools and request.tool_choice.mode in FORCING and not takes_forced_choice(spec, takes):
        if takes.forced_tool_choice:
            why = (
                f"{spec.name} forces a tool call only for the models that support it, and the model "
                f"registry does not say {request.model!r} does (a [tool_rules] entry with "
                "forced_tool_choice = true in models_file says so): use auto (or none)"
            )
        else:
            why = f"{request.model} takes no required or named tool choice: use auto (or none)"
        found.append(FieldViolation(f"{path}.tool_choice.mode", why))
    if request.tools and spec.name == "openai-chat" and not takes.chat_completions_tools:
        found.append(
            FieldViolation(
                f"{path}.tools",
                f"{request.model} takes tools on the Responses API only, not on Chat Completions",
            )
        )
    return found


def fit(spec: ProviderSpec, request: chat_pb2.ChatRequest, takes: Takes, path: str) -> ModelFit:
    notices: list[Notice] = []
    model = request.model
    if not takes.known:
        notices.append(
            Notice(
                UNKNOWN_MODEL,
                f"{model!r} is not in the model registry: every parameter is sent as given, and its "
                f"window is taken to be {DEFAULT_MAX_CONTEXT_TOKENS:,} tokens",
                f"{path}.model",
            )
        )
    elif takes.family not in spec.families:
        notices.append(
            Notice(
                MODEL_FAMILY_MISMATCH,
                f"{model!r} is a {takes.family} model, rendered for {spec.name} "
                f"(which serves {', '.join(sorted(spec.families))} models) as asked",
                f"{path}.model",
            )
        )
    reasoning = request.reasoning
    asked = reasoning_asked(reasoning)
    send_reasoning = send_budget = True
    if asked and not takes.reasoning:
        send_reasoning = False
        notices.append(
            Notice(
                REASONING_NOT_SENT,
                f"{model!r} has no extended thinking: the reasoning settings were not sent",
                f"{path}.reasoning",
            )
        )
    elif reasoning.disabled and not spec.thinking_budget:
        notices.append(
            Notice(
                REASONING_NOT_SENT,
                f"{spec.name} has no setting that turns reasoning off: reasoning.disabled was not sent "
                "(the model reasons as it does by default)",
                f"{path}.reasoning.disabled",
            )
        )
    elif reasoning.HasField("budget_tokens") and not spec.thinking_budget:
        send_budget = False
        rest = "its effort was sent" if reasoning.effort else "no reasoning setting was sent"
        notices.append(
            Notice(
                THINKING_BUDGET_NOT_SENT,
                f"{spec.name} takes a reasoning effort, not a budget: budget_tokens was not sent; {rest}",
                f"{path}.reasoning.budget_tokens",
            )
        )
    send_temperature = True
    if request.HasField("temperature") and not takes.temperature:
        send_temperature = False
        notices.append(
            Notice(
                TEMPERATURE_NOT_SENT,
                f"{model!r} takes no temperature: it was not sent",
                f"{path}.temperature",
            )
        )
    return ModelFit(takes, send_reasoning, send_temperature, send_budget, tuple(notices))


def apply(fit: ModelFit, request: chat_pb2.ChatRequest, origins: list[int], path: str) -> list[Notice]:
    """Leave out of `request` (a copy) what the model does not take; the notices for its messages."""
    if not fit.reasoning:
        request.ClearField("reasoning")
    elif not fit.budget:
        request.reasoning.ClearField("budget_tokens")
    if not fit.temperature:
        request.ClearField("temperature")
    notices: list[Notice] = []
    media = fit.takes.media
    for message, origin in zip(request.messages, origins, strict=True):
        for j, part in enumerate(message.content_parts):
            found = media_of(part)
            if found is None or found[0] in media:
                continue
            kind, media_part = found
            name = media_part.filename or media_part.mime_type or kind
            part.Clear()
            part.text = f"[{kind} {name} not sent: {request.model} does not read {kind} parts]"
            notices.append(
                Notice(
                    MEDIA_NOT_SENT,
                    f"{request.model!r} does not read {kind} parts: a line of text stands for it",
                    f"{path}.messages[{origin}].content_parts[{j}].{kind}",
                )
            )
    return notices
