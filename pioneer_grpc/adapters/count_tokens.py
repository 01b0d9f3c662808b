"""The providers' own token counts, over HTTP with httpx: Anthropic and Gemini count-tokens endpoints.

    Anthropic: POST {base}/v1/messages/count_tokens  (x-api-key, anthropic-version)
               {"model": M, "messages": [{"role": "user", "content": TEXT}]} -> {"input_tokens": N}
    Gemini:    POST {base}/v1beta/models/{M}:countTokens  (x-goog-api-key)
               {"contents": [{"role": "user", "parts": [{"text": TEXT}]}]} -> {"totalTokens": N}

Each text is counted as one user message, as the provider counts it (so its
framing tokens are included). A provider is counted through only when its base URL
is configured and its API key is in the environment; any failure (HTTP status, timeout, a body without
the count) raises CountFailed, and the caller falls back to the estimate.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

ANTHROPIC_VERSION = "2023-06-01"
# Texts counted at once against one provider: bounded, so a large CountTokens cannot flood it.
MAX_CONCURRENT = 8
# One request per item: past this many items a CountTokens call is estimated instead.
MAX_ITEMS = 64


class CountFailed(RuntimeError):
    """The provider did not answer with a count; the message says why."""


@dataclass(frozen=True)
class Endpoint:
    provider: str  # "anthropic" or "gemini"
    base_url: str
    api_key: str

    @property
    def tokenizer(self) -> str:
        return f"{self.provider}_count_tokens"

    def request(self, model: str, text: str) -> tuple[str, dict[str, str], dict[str, Any]]:
        base = self.base_url.rstrip("/")
        if self.provider == "anthropic":
            return (
                f"{base}/v1/messages/count_tokens",
                {"x-api-key": self.api_key, "anthropic-version": ANTHROPIC_VERSION},
                {"model": model, "messages": [{"role": "user", "content": text}]},
            )
        return (
            f"{base}/v1beta/models/{model.removeprefix('models/')}:countTokens",
            {"x-goog-api-key": self.api_key},
            {"contents": [{"role": "user", "parts": [{"text": text}]}]},
        )

    def count_of(self, payload: Any) -> int:
        key = "input_tokens" if self.provider == "anthropic" else "totalTokens"
        value = payload.get(key) if isinstance(payload, dict) else None
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise CountFailed(f"{self.provider} answered without a count ({key})")
        return value


class ProviderTokenCounter:
    """Counts through the providers whose key is configured; `for_provider` is None for the others."""

    def __init__(self, endpoints: Sequence[Endpoint], timeout_seconds: float) -> None:
        self._endpoints = {e.provider: e for e in endpoints}
        self._client = httpx.AsyncClient(timeout=timeout_seconds)

    def for_provider(self, provider: str) -> Endpoint | None:
        return self._endpoints.get(provider)

    async def count(self, endpoint: Endpoint, model: str, texts: Sequence[str]) -> list[int]:
        if len(texts) > MAX_ITEMS:
            raise CountFailed(f"{endpoint.provider}: {len(texts):,} items; past {MAX_ITEMS}, estimated")
        client = self._client
        gate = asyncio.Semaphore(MAX_CONCURRENT)

        async def one(text: str) -> int:
            if not text:
                return 0
            url, headers, body = endpoint.request(model, text)
            async with gate:
                try:
                    response = await client.post(url, headers=headers, json=body)
                except httpx.HTTPError as exc:
                    raise CountFailed(f"{endpoint.provider}: {type(exc).__name__}: {exc}") from exc
            if response.status_code != 200:
                raise CountFailed(f"{endpoint.provider}: HTTP {response.status_code}: {response.text[:200]}")
            try:
                payload = response.json()
            except ValueError as exc:
                raise CountFailed(f"{endpoint.provider}: the answer is not JSON") from exc
            return endpoint.count_of(payload)

        # The first failure answers the call: the requests still running are cancelled with it.
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(one(text)) for text in texts]
        except* CountFailed as failed:
            raise failed.exceptions[0] from None
        return [task.result() for task in tasks]

    async def close(self) -> None:
        await self._client.aclose()


def build_token_counter(
    *,
    anthropic_base_url: str,
    anthropic_api_key_env: str,
    gemini_base_url: str,
    gemini_api_key_env: str,
    timeout_seconds: float,
    environ: dict[str, str] | None = None,
) -> ProviderTokenCounter | None:
    """None when no provider is configured: CountTokens then estimates without any HTTP."""
    env = dict(os.environ) if environ is None else environ
    endpoints = [
        Endpoint(provider, base, env[key_env])
        for provider, base, key_env in (
            ("anthropic", anthropic_base_url, anthropic_api_key_env),
            ("gemini", gemini_base_url, gemini_api_key_env),
        )
        if base and key_env and env.get(key_env)
    ]
    return ProviderTokenCounter(endpoints, timeout_seconds) if endpoints else None
