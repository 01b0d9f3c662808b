"""The model registry: the packaged registry.toml, plus an operator's file on top.

registry = load_registry(Path("my-models.toml"))   # or load_registry() for the packaged one
info = registry.lookup("claude-sonnet-4-5-20250929")  # longest prefix match, None if unknown
info.context_window, info.response_reserve, info.tokenizer
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pioneer_grpc.history.tokens import TOKENIZERS

PACKAGED = Path(__file__).with_name("registry.toml")
PROVIDERS = ("openai", "anthropic", "gemini")
# A thread's default response reserve: the model's maximum output, but at most
# this share of its window, so a long-output model still leaves room for history.
RESERVE_SHARE = 8


class RegistryError(ValueError):
    """A registry file is not valid; the message names the file, the entry and the field."""


@dataclass(frozen=True)
class ModelInfo:
    prefix: str
    provider: str
    context_window: int
    max_output: int
    tokenizer: str
    extended_thinking: bool
    checked: str
    cache_min_tokens: int | None = None

    @property
    def response_reserve(self) -> int:
        return min(self.max_output, self.context_window // RESERVE_SHARE)


def _entry(where: str, prefix: str, raw: Mapping[str, Any]) -> ModelInfo:
    def need(name: str, kind: type) -> Any:
        value = raw.get(name)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise RegistryError(f"{where}: models.{prefix}.{name} must be a {kind.__name__}")
        return value

    provider = need("provider", str)
    if provider not in PROVIDERS:
        raise RegistryError(f"{where}: models.{prefix}.provider must be one of {', '.join(PROVIDERS)}")
    tokenizer = need("tokenizer", str)
    if tokenizer not in TOKENIZERS:
        raise RegistryError(f"{where}: models.{prefix}.tokenizer must be one of {', '.join(TOKENIZERS)}")
    window, output = need("context_window", int), need("max_output", int)
    if window <= 0 or not 0 < output <= window:
        raise RegistryError(f"{where}: models.{prefix} needs 0 < max_output <= context_window")
    cache_min = raw.get("cache_min_tokens")
    if cache_min is not None and (not isinstance(cache_min, int) or cache_min < 0):
        raise RegistryError(f"{where}: models.{prefix}.cache_min_tokens must be a non-negative integer")
    return ModelInfo(
        prefix=prefix,
        provider=provider,
        context_window=window,
        max_output=output,
        tokenizer=tokenizer,
        extended_thinking=bool(raw.get("extended_thinking", False)),
        checked=str(raw.get("checked", "")),
        cache_min_tokens=cache_min,
    )


def _read(path: Path) -> dict[str, ModelInfo]:
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise RegistryError(f"model registry {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(f"model registry {path}: not valid TOML: {exc}") from exc
    models = data.get("models", {})
    if not isinstance(models, dict):
        raise RegistryError(f"model registry {path}: [models] must be a table")
    return {prefix: _entry(str(path), prefix, raw) for prefix, raw in models.items()}


@dataclass(frozen=True)
class Registry:
    models: Mapping[str, ModelInfo]

    def lookup(self, model: str) -> ModelInfo | None:
        """The entry whose prefix is the longest one `model` starts with ("models/" ignored)."""
        name = model.removeprefix("models/")
        best: ModelInfo | None = None
        for prefix, info in self.models.items():
            if name.startswith(prefix) and (best is None or len(prefix) > len(best.prefix)):
                best = info
        return best


def load_registry(override: Path | None = None) -> Registry:
    models = _read(PACKAGED)
    if override is not None:
        models.update(_read(override))
    return Registry(models)


_packaged: Registry | None = None


def packaged_registry() -> Registry:
    """The registry shipped with the package (read once)."""
    global _packaged
    if _packaged is None:
        _packaged = load_registry()
    return _packaged
