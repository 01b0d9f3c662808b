"""Summaries from an OpenAI-compatible chat-completions endpoint, over HTTP with httpx.

One user message, temperature 0.3, max_tokens = the target. Server errors (5xx,
429), timeouts and connection failures are retried with exponential backoff;
anything else, and an empty reply, raises SummarizerError.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import httpx

from pioneer_grpc.history.summarizers.base import SummarizerError, SummaryRequest, transcript

TEMPERATURE = 0.3
FIRST_BACKOFF_SECONDS = 0.5

_INSTRUCTIONS = """\
Rewrite the conversation below as a summary of about {target} tokens. The summary \
takes the conversation's place: the assistant continuing it will see only the \
summary, so keep what it needs to carry on without asking again.

Keep:
- each decision that was made and the reason given for it;
- technical details: file paths, function, class and command names, code patterns;
- the user's preferences, and every correction the user made;
- work that is still open, and where each task stands;
- errors that came up, and how they were resolved (or that they were not).

Leave out greetings and repetition. State only what the conversation says."""


def build_prompt(request: SummaryRequest) -> str:
    parts = [_INSTRUCTIONS.format(target=request.target_tokens)]
    if request.previous_summary:
        parts.append(f"Summary of the earlier conversation (fold it in):\n{request.previous_summary}")
    lines = "\n\n".join(f"{line.speaker}: {line.text}" for line in transcript(request.entries))
    parts.append(f"Conversation:\n{lines}")
    return "\n\n".join(parts)


def _retryable(status: int) -> bool:
    return status == 429 or status >= 500


class OpenAISummarizer:
    name = "openai"

    def __init__(
        self,
        base_url: str,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_seconds: float = 60.0,
        retries: int = 2,
        first_backoff_seconds: float = FIRST_BACKOFF_SECONDS,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.timeout_seconds = timeout_seconds
        self.retries = retries
        self.first_backoff_seconds = first_backoff_seconds

    def body(self, request: SummaryRequest) -> dict[str, Any]:
        return {
            "model": request.model,
            "messages": [{"role": "user", "content": build_prompt(request)}],
            "temperature": TEMPERATURE,
            "max_tokens": request.target_tokens,
        }

    async def summarize(self, request: SummaryRequest) -> str:
        if not self.base_url:
            raise SummarizerError("summarizer_base_url is not set")
        if not request.model:
            raise SummarizerError("the thread has neither a summary model nor a model")
        headers = {"content-type": "application/json"}
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        if key:
            headers["authorization"] = f"Bearer {key}"
        body = self.body(request)
        url = f"{self.base_url}/chat/completions"
        made = 0  # requests sent, which a refusal not worth retrying cuts short
        async with httpx.AsyncClient(timeout=self.timeout_seconds) as client:
            last = ""
            for attempt in range(self.retries + 1):
                made += 1
                if attempt:
                    await asyncio.sleep(self.first_backoff_seconds * 2 ** (attempt - 1))
                try:
                    response = await client.post(url, json=body, headers=headers)
                except httpx.TimeoutException:
                    last = f"no answer within {self.timeout_seconds:g} s"
                    continue
                except httpx.TransportError as exc:
                    last = f"cannot reach {url}: {type(exc).__name__}: {exc}"
                    continue
                if response.status_code == 200:
                    return _reply_text(response)
                last = f"HTTP {response.status_code}: {response.text[:300]}"
                if not _retryable(response.status_code):
                    break
        tries = "1 try" if made == 1 else f"{made} tries"
        raise SummarizerError(f"summary model {request.model!r} failed after {tries}: {last}")


def _reply_text(response: httpx.Response) -> str:
    try:
        text = response.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise SummarizerError(f"reply is not a chat completion: {type(exc).__name__}: {exc}") from None
    if not isinstance(text, str) or not text.strip():
        raise SummarizerError("the summary model returned an empty summary")
    return text.strip()
