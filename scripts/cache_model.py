"""The provider cache model (pioneer_grpc/providers/cache_model.py) on the benchmark's provider paths.

The rules themselves live in the package, where the server also applies them to each round's body
to say what a provider's cache should have served (the "expected" side of a round's usage).
"""

from __future__ import annotations

from dataclasses import dataclass

from pioneer_grpc.models.registry import packaged_registry
from pioneer_grpc.providers.cache_model import PathModel, PathRound
from pioneer_grpc.v1 import provider_service_pb2

P = provider_service_pb2
__all__ = ["MODELS_BY_PATH", "PathModel", "PathRound", "PathSpec", "model_for"]


@dataclass(frozen=True)
class PathSpec:
    provider: int
    model: str


MODELS_BY_PATH = {
    "anthropic": PathSpec(P.PROVIDER_ANTHROPIC_MESSAGES, "claude-sonnet-4-5"),
    "bedrock": PathSpec(P.PROVIDER_AMAZON_BEDROCK_CONVERSE, "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    "openai-chat": PathSpec(P.PROVIDER_OPENAI_CHAT_COMPLETIONS, "gpt-5"),
    "openai-responses": PathSpec(P.PROVIDER_OPENAI_RESPONSES, "gpt-5"),
    "gemini": PathSpec(P.PROVIDER_GEMINI_GENERATE_CONTENT, "gemini-2.5-pro"),
}


def model_for(path: str) -> PathModel:
    spec = MODELS_BY_PATH[path]
    info = packaged_registry().lookup(spec.model)
    assert info is not None, spec.model
    return PathModel(spec.provider, info)
