"""Every provider API the server renders for, by Provider enum value (providers/spec.py)."""

from __future__ import annotations

from collections.abc import Mapping

from pioneer_grpc.providers import anthropic, bedrock, gemini, openai_chat, openai_responses
from pioneer_grpc.providers.spec import ProviderSpec
from pioneer_grpc.v1 import provider_service_pb2

SPECS: Mapping[int, ProviderSpec] = {
    spec.provider: spec
    for spec in (
        openai_chat.SPEC,
        openai_responses.SPEC,
        anthropic.SPEC,
        gemini.SPEC,
        bedrock.SPEC,
    )
}
# Provider enum values no renderer stands behind, and why.
REFUSED: Mapping[int, str] = {
    provider_service_pb2.PROVIDER_UNSPECIFIED: "must name a provider API",
}
BY_NAME: Mapping[str, ProviderSpec] = {spec.name: spec for spec in SPECS.values()}


def spec_for(provider: int) -> ProviderSpec | None:
    return SPECS.get(provider)
