"""Gemini generateContent: what the tests over every provider use (tests/providers/conformance.py)."""

from __future__ import annotations

import json
from typing import Any

from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.conformance import Body, Conformance, Model, is_on
from tests.providers.gemini.rules import BROKEN, check_types, strict

P = provider_service_pb2


def _reasoning(body: Body, reasoning: chat_pb2.Reasoning) -> bool:
    budget = body.get("generationConfig", {}).get("thinkingConfig", {}).get("thinkingBudget")
    return budget is not None and (budget > 0) == is_on(reasoning)


def _call_ids(body: Body) -> list[str]:
    return [p["functionCall"]["id"] for c in body["contents"] for p in c["parts"] if "functionCall" in p]


def _calling(body: Body) -> str:
    return str(body.get("toolConfig", {}).get("functionCallingConfig", {}).get("mode", "AUTO"))


def _send(base_url: str, body: Body, model: str) -> None:
    from google import genai
    from google.genai import types

    client = genai.Client(
        api_key="test", http_options=types.HttpOptions(base_url=base_url, api_version="v1beta")
    )
    # JSON validation, so base64 strings become bytes the way the SDK expects.
    contents = [types.Content.model_validate_json(json.dumps(c)) for c in body["contents"]]
    config: dict[str, Any] = {k: body[k] for k in ("systemInstruction", "tools", "toolConfig") if k in body}
    config.update(body.get("generationConfig", {}))
    client.models.generate_content(
        model=model,
        contents=contents,  # type: ignore[arg-type]
        config=types.GenerateContentConfig.model_validate_json(json.dumps(config)),
    )


FREE_FORM = {"args", "response", "parametersJsonSchema"}


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def gemini_spelling(value: Any) -> Any:
    """Keys in lowerCamelCase, free-form JSON untouched."""
    if isinstance(value, list):
        return [gemini_spelling(v) for v in value]
    if isinstance(value, dict):
        out = {}
        for key, inner in value.items():
            key = _camel(key)
            out[key] = inner if key in FREE_FORM else gemini_spelling(inner)
        return out
    return value


def _as_body(wire: Any, body: Body) -> Any:
    """The SDK writes nested keys in their proto spelling (which the API accepts as well as
    lowerCamelCase), and always sends `"generationConfig": {}`, which a body leaves out when empty."""
    wire = gemini_spelling(wire)
    if "generationConfig" not in body and wire.get("generationConfig") == {}:
        del wire["generationConfig"]
    return wire


CONFORMANCE = Conformance(
    P.PROVIDER_GEMINI_GENERATE_CONTENT,
    (
        Model("gemini-2.0-flash", False),
        Model("gemini-2.5-flash", True),
        Model("models/gemini-2.5-pro", True),
        Model("gemma-local-3", True, notice="unknown_model"),
        Model("gpt-4.1-mini", False, notice="model_family_mismatch"),
    ),
    strict,
    BROKEN,
    check_types,
    lambda body: [
        p["functionCall"]["id"] for c in body["contents"] for p in c["parts"] if "functionCall" in p
    ],
    lambda body: "temperature" in body.get("generationConfig", {}),
    _reasoning,
    lambda body: bool(body.get("tools")) and _calling(body) != "NONE",
    lambda body: _calling(body) == "ANY",
    case_model="gemini-2.5-flash",
    stable_block=lambda body: body["systemInstruction"]["parts"][0],
    sdk_send=_send,
    wire_as_body=_as_body,
    tool_result_media_notices=(("tool_error_in_content", "chat_request.messages[3].is_error"),),
)
