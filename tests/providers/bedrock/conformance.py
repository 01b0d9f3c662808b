"""Amazon Bedrock Converse: what the tests over every provider use (tests/providers/conformance.py).

Its rules and request types are in rules.py.
"""

from __future__ import annotations

import base64
from functools import cache
from typing import Any

from pioneer_grpc.v1 import provider_service_pb2
from tests.providers.bedrock.rules import BROKEN, check_types, strict
from tests.providers.conformance import Conformance, Model

P = provider_service_pb2
BEDROCK = P.PROVIDER_AMAZON_BEDROCK_CONVERSE
MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def _call_ids(body: dict[str, Any]) -> list[str]:
    return [b["toolUse"]["toolUseId"] for m in body["messages"] for b in m["content"] if "toolUse" in b]


def blobs_as_bytes(body: dict[str, Any]) -> dict[str, Any]:
    """The body as botocore takes it: the base64 `bytes` of image and document sources as bytes
    (botocore sends them base64 again); tool inputs and schemas are left as they are."""

    def block(b: dict[str, Any]) -> dict[str, Any]:
        kind = next(iter(b), "")
        if kind in ("image", "document") and "bytes" in b[kind].get("source", {}):
            return {kind: {**b[kind], "source": {"bytes": base64.b64decode(b[kind]["source"]["bytes"])}}}
        if kind == "toolResult":
            return {kind: {**b[kind], "content": [block(inner) for inner in b[kind].get("content", [])]}}
        return b

    messages = [{**m, "content": [block(b) for b in m["content"]]} for m in body["messages"]]
    return {**body, "messages": messages}


@cache
def _client(base_url: str) -> Any:
    import botocore.session
    from botocore.config import Config

    return botocore.session.Session().create_client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=base_url,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"total_max_attempts": 1}),
    )


def _send(base_url: str, body: dict[str, Any], model: str) -> None:
    """botocore's `converse`, the model in the path as the SDK puts it (it reads no local profile:
    the callers point AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE at /dev/null)."""
    _client(base_url).converse(modelId=model, **blobs_as_bytes(body))


CONFORMANCE = Conformance(
    BEDROCK,
    (
        Model(MODEL, True),
        Model("anthropic.claude-3-haiku-20240307-v1:0", False),
        Model("amazon.nova-pro-v1:0", True, notice="unknown_model"),
    ),
    strict,
    BROKEN,
    check_types,
    _call_ids,
    lambda body: "temperature" in body.get("inferenceConfig", {}),
    # Converse sends no reasoning setting (the renderer leaves it out, with a notice).
    lambda body, reasoning: False,
    # Converse has no tool choice none: declared tools can be called.
    lambda body: "toolConfig" in body,
    lambda body: bool(set(body.get("toolConfig", {}).get("toolChoice", {})) & {"any", "tool"}),
    sdk_send=_send,
    case_model=MODEL,
    stable_block=lambda body: body["system"][0],
    # Converse takes media as data or from S3, never by URL.
    refused_cases=frozenset({"images", "tool_result_media"}),
)
