"""Whether an Anthropic request's stable prompt is worth a cache breakpoint, by the model's minimum in tokens.

Anthropic caches a prefix (tool definitions, then system blocks) only when it
holds at least the model's minimum number of tokens (1,024 to 4,096, by model:
the registry's cache_min_tokens); a breakpoint on a shorter prefix costs a
cache write that is never read. The renderer cannot count (it runs on the
event loop and knows no registry), so the use case counts here, off the loop,
and hands the renderer the answer. The tool definitions are counted as their
JSON, which undercounts what Anthropic adds for tool use: the check errs
towards no breakpoint.
"""

from __future__ import annotations

import json

from google.protobuf.json_format import MessageToDict

from pioneer_grpc.history.tokens import count_tokens
from pioneer_grpc.models.registry import Registry
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2

P = provider_service_pb2


def _tools_text(request: chat_pb2.ChatRequest) -> str:
    return json.dumps(
        [
            {"name": t.name, "description": t.description, "input_schema": MessageToDict(t.parameters)}
            for t in request.tools
        ],
        separators=(",", ":"),
    )


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
    if provider != P.PROVIDER_ANTHROPIC_MESSAGES or not request.compiled_prompt.stable_system_text:
        return None
    if options is not None and options.HasField("anthropic_min_cache_chars"):
        return None
    info = models.lookup(request.model)
    if info is None or info.cache_min_tokens is None:
        return None
    texts = [request.compiled_prompt.stable_system_text]
    if request.tools:
        texts.append(_tools_text(request))
    return sum(await count_tokens(texts, info.tokenizer)) >= info.cache_min_tokens
