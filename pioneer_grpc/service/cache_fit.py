"""Whether an Anthropic request's stable prompt is worth a cache breakpoint, by the model's minimum in tokens.

Anthropic caches a prefix (tool definitions, then system blocks) only when it
holds at least the model's minimum number of tokens (1,024 to 4,096, by model:
the registry's cache_min_tokens); a breakpoint on a shorter prefix costs a
cache write that is never read. The renderer cannot count (it runs on the
event loop and knows no registry), so the use case counts here, off the loop,
and hands the renderer the answer. The tool definitions are counted as their
JSON, which undercounts what Anthropic adds for tool use: the check errs
towards no breakpoint.

A round sends the same stable prompt and tools as the rounds before it: the
count is remembered by the texts counted and their tokenizer.
"""

from __future__ import annotations

import asyncio
import json

from google.protobuf.json_format import MessageToDict

from pioneer_grpc.history.tokens import count_blocking
from pioneer_grpc.models.registry import ModelInfo, Registry
from pioneer_grpc.remembered import Remembered
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2

P = provider_service_pb2
# Bytes of the remembered keys (a stable prompt and its tools each).
_COUNTED_BYTES = 4 * 1024 * 1024
_counted: Remembered[int] = Remembered(_COUNTED_BYTES)


def _tools_text(request: chat_pb2.ChatRequest) -> str | None:
    """The tool definitions as JSON; None when a schema holds a non-finite number (no JSON has one)."""
    try:
        tools = [
            {"name": t.name, "description": t.description, "input_schema": MessageToDict(t.parameters)}
            for t in request.tools
        ]
    except ValueError:
        return None
    return json.dumps(tools, separators=(",", ":"))


def _counted_model(
    models: Registry,
    provider: int,
    request: chat_pb2.ChatRequest,
    options: provider_service_pb2.RenderOptions | None,
) -> ModelInfo | None:
    """The model whose minimum decides; None when no count decides (see anthropic_stable_cacheable)."""
    if provider != P.PROVIDER_ANTHROPIC_MESSAGES or not request.compiled_prompt.stable_system_text:
        return None
    if options is not None and options.HasField("anthropic_min_cache_chars"):
        return None
    info = models.lookup(request.model)
    if info is None or info.cache_min_tokens is None:
        return None
    return info


def _stable_tokens(request: chat_pb2.ChatRequest, tokenizer: str) -> int | None:
    """Tokens of the stable prompt and the tool definitions; None when the tools are not JSON. Blocking.

    Counting runs before the renderer validates the request: a request that
    validation refuses gets no count here, and its refusal from the renderer.
    """
    stable = request.compiled_prompt.stable_system_text
    tools = b"".join(tool.SerializeToString(deterministic=True) for tool in request.tools)
    key = b"\0".join((tokenizer.encode(), len(stable).to_bytes(8, "big"), stable.encode(), tools))
    count = _counted.get(key)
    if count is None:
        texts = [stable]
        if request.tools:
            tools_text = _tools_text(request)
            if tools_text is None:
                return None
            texts.append(tools_text)
        count = sum(count_blocking(texts, tokenizer))
        _counted.put(key, count)
    return count


def anthropic_stable_cacheable_blocking(
    models: Registry,
    provider: int,
    request: chat_pb2.ChatRequest,
    options: provider_service_pb2.RenderOptions | None,
) -> bool | None:
    """anthropic_stable_cacheable, in the caller's (worker) thread."""
    info = _counted_model(models, provider, request, options)
    if info is None or info.cache_min_tokens is None:
        return None
    tokens = _stable_tokens(request, info.tokenizer)
    return None if tokens is None else tokens >= info.cache_min_tokens


async def anthropic_stable_cacheable(
    models: Registry,
    provider: int,
    request: chat_pb2.ChatRequest,
    options: provider_service_pb2.RenderOptions | None,
) -> bool | None:
    """True/False by the model's minimum in tokens; None to leave it to the renderer's character rule.

    None when: not Anthropic, the caller set anthropic_min_cache_chars (theirs
    wins), no stable prompt, or the registry has no minimum for the model.
    """
    if _counted_model(models, provider, request, options) is None:
        return None
    return await asyncio.to_thread(anthropic_stable_cacheable_blocking, models, provider, request, options)
