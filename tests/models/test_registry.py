"""The packaged model registry and an operator's file on top of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pioneer_grpc.config import ConfigError, load_config
from pioneer_grpc.history.tokens import TOKENIZERS
from pioneer_grpc.models.registry import (
    PROVIDERS,
    RegistryError,
    load_registry,
    model_key,
    packaged_registry,
)


def test_every_packaged_entry_is_complete_and_dated():
    registry = packaged_registry()
    assert {info.provider for info in registry.models.values()} == set(PROVIDERS)
    for info in registry.models.values():
        assert info.tokenizer in TOKENIZERS
        assert 0 < info.response_reserve <= info.max_output <= info.context_window
        assert info.checked == "2026-11-30", info.prefix
        if info.provider == "anthropic" and info.cache_min_tokens is not None:
            assert info.cache_min_tokens in (1_024, 2_048, 4_096)


@pytest.mark.parametrize(
    ("model", "prefix", "tokenizer"),
    [
        ("gpt-4o-mini", "gpt-4o", "o200k_base"),
        ("gpt-4-0613", "gpt-4", "cl100k_base"),
        ("gpt-4-turbo-2024-04-09", "gpt-4-turbo", "cl100k_base"),
        ("gpt-4.1-mini", "gpt-4.1", "o200k_base"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1", "claude_estimate"),
        ("claude-opus-4-20250514", "claude-opus-4", "claude_estimate"),
        ("models/gemini-2.5-flash", "gemini-2.5-flash", "gemini_estimate"),
    ],
)
def test_the_longest_prefix_wins(model: str, prefix: str, tokenizer: str):
    info = packaged_registry().lookup(model)
    assert info is not None
    assert (info.prefix, info.tokenizer) == (prefix, tokenizer)


@pytest.mark.parametrize(
    ("model", "key"),
    [
        ("claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("claude-opus-5.5", "claude-opus-5-5"),
        ("Claude-Sonnet-4-5", "claude-sonnet-4-5"),
        ("us.anthropic.claude-3-7-sonnet-20250219-v1:0", "claude-3-7-sonnet"),
        ("anthropic.claude-3-haiku-20240307-v1:0:200k", "claude-3-haiku"),
        (
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.anthropic.claude-sonnet-4-5-v1:0",
            "claude-sonnet-4-5",
        ),
        (
            "arn:aws:bedrock:us-east-1:123456789012:imported-model/team/anthropic.claude-3-haiku-v1:0",
            "claude-3-haiku",
        ),
        ("global.anthropic.claude-opus-4-1-20250805-v1:0", "claude-opus-4-1"),
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4.1-mini-2025-04-14", "gpt-4-1-mini"),
        ("models/gemini-2.5-pro", "gemini-2-5-pro"),
        ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
    ],
)
def test_a_model_name_is_compared_as_its_key(model: str, key: str):
    assert model_key(model) == key


@pytest.mark.parametrize(
    ("model", "prefix"),
    [
        ("claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("claude-opus-4.1", "claude-opus-4-1"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
        ("eu.anthropic.claude-opus-4-20250514-v1:0", "claude-opus-4"),
        ("gpt-4-1-mini", "gpt-4.1"),
        # A prefix ends at a separator: gpt-4-1106-preview is a GPT-4, not a GPT-4.1.
        ("gpt-4-1106-preview", "gpt-4"),
    ],
)
def test_dotted_and_bedrock_names_find_their_entry(model: str, prefix: str):
    info = packaged_registry().lookup(model)
    assert info is not None, model
    assert info.prefix == prefix


def test_a_tool_rule_applies_to_the_dotted_name_too():
    registry = packaged_registry()
    assert not registry.takes("claude-opus-5.5").forced_tool_choice
    assert not registry.takes("us.anthropic.claude-opus-5-5-20260101-v1:0").forced_tool_choice
    assert registry.takes("claude-opus-5.5").known  # claude-opus-5's window and tokenizer
    assert registry.takes("claude-opus-5").forced_tool_choice


def test_two_prefixes_of_one_model_in_a_file_are_refused(tmp_path: Path):
    path = tmp_path / "models.toml"
    path.write_text(
        _entry().replace("[models.x]", '[models."m-4.5"]')
        + _entry().replace("[models.x]", '[models."m-4-5"]')
    )
    with pytest.raises(RegistryError, match="name the same models"):
        load_registry(path)


def test_an_unknown_model_is_none():
    assert packaged_registry().lookup("llama-3-70b") is None
    assert packaged_registry().lookup("") is None


def test_an_operator_file_adds_and_replaces_entries(tmp_path: Path):
    path = tmp_path / "models.toml"
    path.write_text(
        '[models."llama-3"]\nprovider = "openai"\ncontext_window = 8192\nmax_output = 2048\n'
        'tokenizer = "cl100k_base"\n'
        '[models."gpt-4o"]\nprovider = "openai"\ncontext_window = 64000\nmax_output = 4000\n'
        'tokenizer = "o200k_base"\n'
    )
    registry = load_registry(path)
    llama, gpt = registry.lookup("llama-3-8b"), registry.lookup("gpt-4o")
    assert llama is not None
    assert (llama.context_window, llama.response_reserve) == (8192, 1024)
    assert gpt is not None
    assert gpt.context_window == 64000
    assert registry.lookup("claude-haiku-4-5") is not None  # the rest of the packaged file stays


def _entry(
    provider: str = '"openai"', window: str = "10", output: str = "1", tokenizer: str = '"o200k_base"'
) -> str:
    return (
        f"[models.x]\nprovider = {provider}\ncontext_window = {window}\n"
        f"max_output = {output}\ntokenizer = {tokenizer}\n"
    )


@pytest.mark.parametrize(
    ("body", "names"),
    [
        (_entry(provider='"acme"'), "provider"),
        (_entry(tokenizer='"bpe"'), "tokenizer"),
        (_entry(output="11"), "max_output"),
        (_entry(window='"big"'), "context_window"),
        ("models = [", "not valid TOML"),
        (_entry() + "temperature = 0\n", "temperature"),
        (_entry() + 'media = ["image", "hologram"]\n', "media"),
        ('[tool_rules.x]\nforced_tool_choice = "no"\n', "forced_tool_choice"),
        ("[tool_rules.x]\nparallel = false\n", "unknown keys parallel"),
    ],
)
def test_a_bad_file_fails_server_start_naming_the_field(tmp_path: Path, body: str, names: str):
    path = tmp_path / "models.toml"
    path.write_text(body)
    with pytest.raises(RegistryError, match=names):
        load_registry(path)
    with pytest.raises(ConfigError, match=names):
        load_config(flags={"models_file": str(path)}, environ={})


def test_what_a_model_takes():
    registry = packaged_registry()
    o3 = registry.takes("o3-2025-04-16")
    assert o3.known
    assert o3.family == "openai"
    assert o3.reasoning
    assert not o3.temperature
    assert not registry.takes("gpt-4.1").reasoning
    assert registry.takes("gpt-4.1").temperature
    assert registry.takes("gpt-4").media == frozenset()
    assert "video" in registry.takes("gemini-2.5-flash").media
    assert not registry.takes("claude-opus-5-5").forced_tool_choice
    assert registry.takes("claude-opus-5").forced_tool_choice
    assert not registry.takes("gpt-6.1-sol-preview").chat_completions_tools
    unknown = registry.takes("house-model-7")
    assert not unknown.known
    assert unknown.reasoning
    assert unknown.temperature
    assert len(unknown.media) == 4


def test_an_operator_file_adds_tool_rules(tmp_path: Path):
    path = tmp_path / "models.toml"
    path.write_text("[tool_rules.house-]\nforced_tool_choice = false\n")
    assert not load_registry(path).takes("house-7").forced_tool_choice


def test_the_service_reads_a_bedrock_or_dotted_name_as_the_renderers_do():
    from pioneer_grpc.service.history import model_budget
    from pioneer_grpc.service.token_fit import counting_for

    registry = packaged_registry()
    sonnet = registry.models[model_key("claude-sonnet-4-5")]
    bedrock = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    # A new thread's window, and its tokenizer, from the model's entry, not the defaults.
    assert model_budget(registry, bedrock) == (sonnet.context_window, sonnet.response_reserve)
    assert model_budget(registry, "claude-sonnet-4.5") == (sonnet.context_window, sonnet.response_reserve)
    assert counting_for(registry, bedrock).tokenizer == "claude_estimate"
    assert counting_for(registry, "claude-sonnet-4.5").known
