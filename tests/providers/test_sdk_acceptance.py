"""Each rendered body goes through the provider's official Python SDK to a loopback server.

The SDK builds the request from our body (for Gemini, through its pydantic
types), so what arrives on the wire is what the SDK makes of it. It must be
JSON-equal to our body, and sent to our path. What is ignored, exactly:
- Gemini: the SDK always sends `"generationConfig": {}`, even when nothing in
  it is set; our body omits the empty object. The SDK writes nested fields in
  their proto spelling (`mime_type`, `parameters_json_schema`,
  `thinking_budget`), which the API accepts as well as lowerCamelCase; keys are
  compared after conversion to lowerCamelCase, except inside free-form JSON
  (call args, function responses, tool schemas), compared as is. (The SDK is
  told to use v1beta, our path's version; its own default is v1.)
- Headers and query strings; the OpenAI and Anthropic SDKs add no body field
  (no stream flag on non-streaming calls), so nothing else is ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from pioneer_grpc.providers import render
from tests.providers.cases import CASES, PROVIDERS, build
from tests.providers.fake_http import RecordingServer, recording_server


@pytest.fixture(scope="module")
def fake() -> Iterator[RecordingServer]:
    with recording_server() as server:
        yield server


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def _send_openai_chat(base_url: str, body: dict[str, Any]) -> None:
    client = openai.OpenAI(base_url=f"{base_url}/v1", api_key="test", max_retries=0)
    client.chat.completions.create(**body)


def _send_openai_responses(base_url: str, body: dict[str, Any]) -> None:
    client = openai.OpenAI(base_url=f"{base_url}/v1", api_key="test", max_retries=0)
    client.responses.create(**body)


def _send_anthropic(base_url: str, body: dict[str, Any]) -> None:
    client = anthropic.Anthropic(base_url=base_url, api_key="test", max_retries=0)
    client.messages.create(**body)


def _send_gemini(base_url: str, body: dict[str, Any], model: str) -> None:
    client = genai.Client(
        api_key="test", http_options=genai_types.HttpOptions(base_url=base_url, api_version="v1beta")
    )
    # JSON validation, so base64 strings become bytes the way the SDK expects.
    contents = [genai_types.Content.model_validate_json(json.dumps(c)) for c in body["contents"]]
    config: dict[str, Any] = {k: body[k] for k in ("systemInstruction", "tools", "toolConfig") if k in body}
    config.update(body.get("generationConfig", {}))
    client.models.generate_content(
        model=model,
        contents=contents,  # type: ignore[arg-type]
        config=genai_types.GenerateContentConfig.model_validate_json(json.dumps(config)),
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


@pytest.mark.parametrize("provider_name", list(PROVIDERS))
@pytest.mark.parametrize("case", list(CASES))
def test_sdk_sends_our_body(fake: RecordingServer, case: str, provider_name: str) -> None:
    provider = PROVIDERS[provider_name]
    request = build(case, provider)
    rendered = render(provider, request)
    body = json.loads(rendered.body_json)

    if provider_name == "openai-chat":
        _send_openai_chat(fake.base_url, body)
    elif provider_name == "openai-responses":
        _send_openai_responses(fake.base_url, body)
    elif provider_name == "anthropic":
        _send_anthropic(fake.base_url, body)
    else:
        _send_gemini(fake.base_url, body, request.model)

    sent = fake.last()
    assert sent.path.split("?")[0] == rendered.path
    wire = sent.json()
    if provider_name == "gemini":
        wire = gemini_spelling(wire)
        if "generationConfig" not in body:
            assert wire.pop("generationConfig") == {}
    assert wire == body
