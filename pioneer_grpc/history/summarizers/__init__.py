"""Summarizers: `extractive` (embedded, deterministic, no model) and `openai`
(any OpenAI-compatible chat-completions endpoint)."""

from __future__ import annotations

from pioneer_grpc.history.summarizers.base import Summarizer, SummarizerError, SummaryRequest
from pioneer_grpc.history.summarizers.extractive import ExtractiveSummarizer
from pioneer_grpc.history.summarizers.openai import OpenAISummarizer

__all__ = [
    "ExtractiveSummarizer",
    "OpenAISummarizer",
    "Summarizer",
    "SummarizerError",
    "SummaryRequest",
    "build_summarizer",
]


def build_summarizer(
    kind: str,
    base_url: str = "",
    api_key_env: str = "OPENAI_API_KEY",
    timeout_seconds: float = 60.0,
    retries: int = 2,
) -> Summarizer:
    if kind == "openai":
        return OpenAISummarizer(
            base_url=base_url, api_key_env=api_key_env, timeout_seconds=timeout_seconds, retries=retries
        )
    if kind == "extractive":
        return ExtractiveSummarizer()
    raise ValueError(f"unknown summarizer {kind!r}: use extractive or openai")
