"""The official SDKs' request types, as validators of a rendered body (unknown keys forbidden).

OpenAI and Anthropic: pydantic TypeAdapters over the SDKs' request param TypedDicts
(CompletionCreateParamsNonStreaming, ResponseCreateParamsNonStreaming,
MessageCreateParamsNonStreaming), every TypedDict of the SDKs' types given
`extra="forbid"`. Gemini: the google-genai pydantic models (which forbid unknown
keys themselves) over the contents and the config, read from JSON as the SDK reads
them. A provider added since checks its body with its own SDK's types in its tests
folder (tests/providers/<provider>/conformance.py; tests/providers/conformance.py finds them).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import cache
from typing import Any

import typing_extensions
from pydantic import ConfigDict, TypeAdapter

from pioneer_grpc.v1 import provider_service_pb2

P = provider_service_pb2


def _forbid_extra(prefixes: tuple[str, ...]) -> None:
    for name, module in list(sys.modules.items()):
        if name.startswith(prefixes):
            for value in list(vars(module).values()):
                if typing_extensions.is_typeddict(value) and "__pydantic_config__" not in value.__dict__:
                    value.__pydantic_config__ = ConfigDict(extra="forbid")


@cache
def _adapters() -> dict[int, TypeAdapter[Any]]:
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

    _forbid_extra(("openai.types", "anthropic.types"))
    return {
        P.PROVIDER_OPENAI_CHAT_COMPLETIONS: TypeAdapter(CompletionCreateParamsNonStreaming),
        P.PROVIDER_OPENAI_RESPONSES: TypeAdapter(ResponseCreateParamsNonStreaming),
        P.PROVIDER_ANTHROPIC_MESSAGES: TypeAdapter(MessageCreateParamsNonStreaming),
    }


def _gemini(body: dict[str, Any], model: str) -> None:
    from google.genai import types

    for content in body["contents"]:
        types.Content.model_validate_json(json.dumps(content))
    config = {key: body[key] for key in ("systemInstruction", "tools", "toolConfig") if key in body}
    config.update(body.get("generationConfig", {}))
    types.GenerateContentConfig.model_validate_json(json.dumps(config))


def check_sdk_types(provider: int, body: dict[str, Any], model: str) -> None:
    """Raises (a pydantic ValidationError) when the SDK's request types refuse the body."""
    checks: dict[int, Callable[[dict[str, Any], str], None]] = {
        P.PROVIDER_GEMINI_GENERATE_CONTENT: _gemini,
    }
    if provider in checks:
        checks[provider](body, model)
    else:
        _adapters()[provider].validate_python(body)
