"""Each rendered body goes through the provider's official Python SDK to a loopback server.

The SDK builds the request from our body, so what arrives on the wire is what the SDK
makes of it. It must be JSON-equal to our body, and sent to our path. Each provider's
Conformance (tests/providers/<provider>/conformance.py) sends it and says exactly what is
ignored of what its SDK adds or spells its own way:
- Gemini: the SDK always sends `"generationConfig": {}`, even when nothing in
  it is set; our body omits the empty object. The SDK writes nested fields in
  their proto spelling (`mime_type`, `parameters_json_schema`,
  `thinking_budget`), which the API accepts as well as lowerCamelCase; keys are
  compared after conversion to lowerCamelCase, except inside free-form JSON
  (call args, function responses, tool schemas), compared as is. (The SDK is
  told to use v1beta, our path's version; its own default is v1.)
- Bedrock Converse: botocore takes image and document bytes as bytes and sends them as
  base64 again; the model goes in the path.
- Headers and query strings; the OpenAI and Anthropic SDKs add no body field
  (no stream flag on non-streaming calls), so nothing else is ignored.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from pioneer_grpc.providers import render
from tests.providers.cases import PROVIDERS, build, rendered_cases
from tests.providers.conformance import conformances
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
    for name in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):  # botocore reads no local profile
        monkeypatch.setenv(name, os.devnull)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.mark.parametrize(("case", "provider_name"), rendered_cases())
def test_sdk_sends_our_body(fake: RecordingServer, case: str, provider_name: str) -> None:
    provider = PROVIDERS[provider_name]
    conformance = conformances()[provider]
    request = build(case, provider)
    rendered = render(provider, request)
    body = json.loads(rendered.body_json)

    conformance.sdk_send(fake.base_url, body, request.model)

    sent = fake.last()
    assert sent.path.split("?")[0] == rendered.path
    assert conformance.wire_as_body(sent.json(), body) == body
