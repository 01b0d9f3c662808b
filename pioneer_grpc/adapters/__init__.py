"""What speaks to the outside world on behalf of a core: a summary model over HTTP.

Cores define the interface (`history.summarizers.Summarizer`); adapters
implement it with a transport, and `build_summarizer` picks one by name.
"""

from __future__ import annotations

from pioneer_grpc.adapters.openai_summarizer import OpenAISummarizer
from pioneer_grpc.history.summarizers import ExtractiveSummarizer, Summarizer

__all__ = ["OpenAISummarizer", "build_summarizer"]

SUMMARIZER_KINDS = ("extractive", "openai")


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
    raise ValueError(f"unknown summarizer {kind!r}: use {' or '.join(SUMMARIZER_KINDS)}")
