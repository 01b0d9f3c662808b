"""The model registry: the packaged registry.toml, plus an operator's file on top.

registry = load_registry(Path("my-models.toml"))   # or load_registry() for the packaged one
info = registry.lookup("claude-sonnet-4-5-20250929")  # longest prefix match, None if unknown
model_key("us.anthropic.claude-sonnet-4.5-20250929-v1:0")  # "claude-sonnet-4-5": how names compare
info.context_window, info.response_reserve, info.tokenizer
rule = registry.image_rule("gpt-4o-mini")               # how its images are counted (models/attachments.py)
takes = registry.takes("o3")                            # what the model accepts (Takes)
"""

from __future__ import annotations

import functools
import hashlib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import astuple, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pioneer_grpc.history.tokens import TOKENIZER, TOKENIZERS
from pioneer_grpc.models.attachments import ANTHROPIC, GEMINI, OPENAI_PATCHES, OPENAI_TILES, RULES, ImageRule

PACKAGED = Path(__file__).with_name("registry.toml")
PROVIDERS = ("openai", "anthropic", "gemini")
MEDIA_KINDS = ("image", "file", "audio", "video")
DEFAULT_MEDIA = frozenset({"image", "file"})
# A thread's default response reserve: the model's maximum output, but at most
# this share of its window, so a long-output model still leaves room for history.
RESERVE_SHARE = 8


class RegistryError(ValueError):
    """A registry file is not valid; the message names the file, the entry and the field."""


@dataclass(frozen=True)
class Prices:
    """A model's input prices in USD per million tokens ([sources] says where each is from)."""

    input: float
    cache_read: float
    cache_write: float


PRICE_KEYS = ("input_price", "cache_read_price", "cache_write_price")


def _prices(where: str, prefix: str, raw: Mapping[str, Any]) -> Prices | None:
    given = [raw.get(key) for key in PRICE_KEYS]
    if all(value is None for value in given):
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in given):
        raise RegistryError(f"{where}: models.{prefix} needs all of {', '.join(PRICE_KEYS)}, non-negative")
    return Prices(*(float(v) for v in given))  # type: ignore[arg-type]


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
    temperature: bool = True
    media: frozenset[str] = DEFAULT_MEDIA
    # USD per million input tokens: sent uncached, read from the provider's prompt cache, written to
    # it (what a cached prefix costs the first time); None where the registry has no price.
    prices: Prices | None = None

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
    temperature = raw.get("temperature", True)
    if not isinstance(temperature, bool):
        raise RegistryError(f"{where}: models.{prefix}.temperature must be true or false")
    media = raw.get("media", sorted(DEFAULT_MEDIA))
    if not isinstance(media, list) or not set(media) <= set(MEDIA_KINDS):
        raise RegistryError(f"{where}: models.{prefix}.media must be a list of {', '.join(MEDIA_KINDS)}")
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
        temperature=temperature,
        media=frozenset(media),
        prices=_prices(where, prefix, raw),
    )


@dataclass(frozen=True)
class ToolRule:
    """A model family's own tool rule ([tool_rules])."""

    forced_tool_choice: bool = True
    chat_completions_tools: bool = True


def _tool_rule(where: str, prefix: str, raw: Mapping[str, Any]) -> ToolRule:
    values: dict[str, bool] = {}
    for name in ("forced_tool_choice", "chat_completions_tools"):
        value = raw.get(name, True)
        if not isinstance(value, bool):
            raise RegistryError(f"{where}: tool_rules.{prefix}.{name} must be true or false")
        values[name] = value
    unknown = set(raw) - set(values)
    if unknown:
        raise RegistryError(f"{where}: tool_rules.{prefix} has unknown keys {', '.join(sorted(unknown))}")
    return ToolRule(**values)


@dataclass(frozen=True)
class Takes:
    """What a model accepts, as the registry knows it; `known` False: a model it does not know,
    which is taken to accept everything (and to have DEFAULT_CONTEXT_WINDOW tokens)."""

    known: bool
    family: str  # the registry's `provider` of the model; "" when unknown
    reasoning: bool
    temperature: bool
    media: frozenset[str]
    forced_tool_choice: bool
    chat_completions_tools: bool
    # A [tool_rules] entry names the model (its forced_tool_choice is the registry's word, not a default).
    tool_rule: bool = False


def _image_rule(where: str, prefix: str, raw: Mapping[str, Any]) -> ImageRule:
    rule = raw.get("rule")
    if rule not in (OPENAI_TILES, OPENAI_PATCHES):
        raise RegistryError(f"{where}: images.{prefix}.rule must be {OPENAI_TILES} or {OPENAI_PATCHES}")
    if rule == OPENAI_PATCHES:
        multiplier = raw.get("patch_multiplier")
        if not isinstance(multiplier, int | float) or isinstance(multiplier, bool) or multiplier <= 0:
            raise RegistryError(f"{where}: images.{prefix}.patch_multiplier must be a positive number")
        return ImageRule(OPENAI_PATCHES, patch_multiplier=float(multiplier))
    base, tile = raw.get("base_tokens"), raw.get("tile_tokens")
    if not isinstance(base, int) or not isinstance(tile, int) or isinstance(base, bool):
        base = tile = 0
    if min(base, tile) < 1:
        raise RegistryError(f"{where}: images.{prefix} needs positive integers base_tokens and tile_tokens")
    return ImageRule(OPENAI_TILES, base_tokens=base, tile_tokens=tile)


def _table(path: Path, data: Mapping[str, Any], name: str) -> dict[str, Any]:
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise RegistryError(f"model registry {path}: [{name}] must be a table")
    return table


def _read(path: Path) -> tuple[dict[str, ModelInfo], dict[str, ImageRule], dict[str, ToolRule]]:
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise RegistryError(f"model registry {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(f"model registry {path}: not valid TOML: {exc}") from exc
    models = {prefix: _entry(str(path), prefix, raw) for prefix, raw in _table(path, data, "models").items()}
    images = {
        prefix: _image_rule(str(path), prefix, raw) for prefix, raw in _table(path, data, "images").items()
    }
    tool_rules = {
        prefix: _tool_rule(str(path), prefix, raw) for prefix, raw in _table(path, data, "tool_rules").items()
    }
    return (
        _keyed(path, "models", models),
        _keyed(path, "images", images),
        _keyed(path, "tool_rules", tool_rules),
    )


# How a provider's images are counted when [images] names no rule for the model.
PROVIDER_IMAGE_RULES = {
    "openai": ImageRule(OPENAI_TILES),
    "anthropic": ImageRule(ANTHROPIC),
    "gemini": ImageRule(GEMINI),
}
assert {rule.kind for rule in PROVIDER_IMAGE_RULES.values()} <= set(RULES)


# Before a model's own name: a Bedrock cross-region inference profile, then the model's vendor
# (us.anthropic.claude-..., anthropic.claude-..., amazon.nova-...).
_PROFILE_AND_VENDOR = re.compile(
    r"^(?:(?:us|us-gov|eu|apac|jp|au|ca|global)\.)?"
    r"(?:(?:anthropic|amazon|meta|mistral|cohere|ai21|openai|deepseek|qwen|google|writer)\.)?"
)
# After it: a Bedrock version (-v1:0, -v1:0:200k), a Vertex AI version (@20241022, @001).
_VERSION = re.compile(r"(?:@[a-z0-9._-]+|-v\d+(?::[a-z0-9]+)+)$")
# A release date in the name: -20250929 (Anthropic), -2024-08-06 (OpenAI).
_DATE = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})(?=$|-)")
# A version written with a dot (claude-sonnet-4.5, gpt-4.1): the same as with a dash.
_DOTTED = re.compile(r"(?<=\d)\.(?=\d)")
# What may follow a prefix in a longer name (gpt-4o is not a gpt-4).
_AFTER_PREFIX = frozenset("-_:")


@functools.lru_cache(maxsize=1024)  # every round looks its model up a few times; models are few
def model_key(model: str) -> str:
    """`model` as the registry compares names; every lookup goes through it, and so do the keys.

    Lower case; a path's or ARN's last part (`models/gemini-2.5-pro`, `.../inference-profile/
    eu.anthropic...`); without a Bedrock inference profile and vendor, a Bedrock or Vertex AI
    version suffix (`-v1:0`, `@20250929`) and a release date; dots between digits as dashes. So
    `us.anthropic.claude-sonnet-4-5-20250929-v1:0`, `claude-sonnet-4.5` and
    `claude-sonnet-4-5@20250929` are all `claude-sonnet-4-5`.
    """
    name = model.strip().lower().rsplit("/", 1)[-1]
    name = _PROFILE_AND_VENDOR.sub("", name, count=1)
    name = _VERSION.sub("", name)
    name = _DATE.sub("", name)
    return _DOTTED.sub("-", name)


def _keyed(where: Path, table_name: str, table: Mapping[str, Any]) -> dict[str, Any]:
    """A registry table by model_key of each prefix; two prefixes of one key are an error."""
    keyed: dict[str, Any] = {}
    named: dict[str, str] = {}
    for prefix, value in table.items():
        key = model_key(prefix)
        if not key:
            raise RegistryError(f"model registry {where}: {table_name}.{prefix} names no model")
        if key in keyed:
            raise RegistryError(
                f"model registry {where}: {table_name}.{named[key]} and {table_name}.{prefix} name the "
                f"same models ({key})"
            )
        keyed[key], named[key] = value, prefix
    return keyed


def _longest_prefix(table: Mapping[str, Any], model: str) -> str | None:
    """The longest key of `table` that `model_key(model)` is, or starts with where a part of the name
    ends (at - _ or :, or a key that ends with one)."""
    name = model_key(model)
    matches = [
        key
        for key in table
        if name.startswith(key) and (len(name) == len(key) or {key[-1], name[len(key)]} & _AFTER_PREFIX)
    ]
    return max(matches, key=len) if matches else None


@dataclass(frozen=True)
class Registry:
    # Each table by model_key of its prefix (ModelInfo.prefix keeps the prefix as written).
    models: Mapping[str, ModelInfo]
    # OpenAI models whose images are counted with other constants or by patches, by prefix.
    images: Mapping[str, ImageRule] = field(default_factory=dict)
    # Model families with a tool rule of their own, by prefix.
    tool_rules: Mapping[str, ToolRule] = field(default_factory=dict)

    @cached_property
    def key(self) -> bytes:
        """What the registry holds, as a digest: registries with equal entries have equal keys, and
        any difference gives another. What a cache worked out with one registry is kept under it,
        so an answer worked out with one is never given for another (an object's id would be: a
        registry made where a freed one was gets its id)."""
        tables = (
            sorted((prefix, _canonical(info)) for prefix, info in self.models.items()),
            sorted((prefix, astuple(rule)) for prefix, rule in self.images.items()),
            sorted((prefix, astuple(rule)) for prefix, rule in self.tool_rules.items()),
        )
        return hashlib.sha256(repr(tables).encode()).digest()

    def lookup(self, model: str) -> ModelInfo | None:
        """The entry whose prefix is the longest one `model` starts with, both as model_key has them."""
        prefix = _longest_prefix(self.models, model)
        return None if prefix is None else self.models[prefix]

    def tokenizer_of(self, model: str) -> str:
        """The tokenizer `model` counts in; cl100k_base for a model the registry does not know."""
        info = self.lookup(model)
        return TOKENIZER if info is None else info.tokenizer

    def image_rule(self, model: str) -> ImageRule:
        """How `model` counts images: [images] by longest prefix, else its provider's rule.

        A model the registry does not know counts as OpenAI's GPT-4o does.
        """
        prefix = _longest_prefix(self.images, model)
        if prefix is not None:
            return self.images[prefix]
        info = self.lookup(model)
        return PROVIDER_IMAGE_RULES["openai" if info is None else info.provider]

    def takes(self, model: str) -> Takes:
        """What `model` accepts: its entry, and the tool rule of its family, by longest prefix."""
        info = self.lookup(model)
        prefix = _longest_prefix(self.tool_rules, model)
        rule = self.tool_rules[prefix] if prefix is not None else ToolRule()
        if info is None:
            return Takes(
                False,
                "",
                True,
                True,
                frozenset(MEDIA_KINDS),
                rule.forced_tool_choice,
                rule.chat_completions_tools,
                prefix is not None,
            )
        return Takes(
            True,
            info.provider,
            info.extended_thinking,
            info.temperature,
            info.media,
            rule.forced_tool_choice,
            rule.chat_completions_tools,
            prefix is not None,
        )


def _canonical(info: ModelInfo) -> tuple[object, ...]:
    """The entry's fields in one order, its media sorted (a set's order is not the same in every run)."""
    return tuple(sorted(value) if isinstance(value, frozenset) else value for value in astuple(info))


def load_registry(override: Path | None = None) -> Registry:
    models, images, tool_rules = _read(PACKAGED)
    if override is not None:
        more_models, more_images, more_rules = _read(override)
        models.update(more_models)
        images.update(more_images)
        tool_rules.update(more_rules)
    return Registry(models, images, tool_rules)


_packaged: Registry | None = None


def packaged_registry() -> Registry:
    """The registry shipped with the package (read once)."""
    global _packaged
    if _packaged is None:
        _packaged = load_registry()
    return _packaged
