"""Rendering a ChatRequest for one provider: checking and building the body are CPU work of their
own (a request at its caps is megabytes), so they run in a worker thread, off the event loop."""

from __future__ import annotations

import asyncio
from functools import partial

from pioneer_grpc.models.registry import Registry
from pioneer_grpc.providers.render import RenderedRequest, render
from pioneer_grpc.service.cache_fit import anthropic_stable_cacheable
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2


async def render_chat(
    provider: provider_service_pb2.Provider,
    chat_request: chat_pb2.ChatRequest,
    options: provider_service_pb2.RenderOptions | None,
    models: Registry | None = None,
) -> RenderedRequest:
    """With `models`, Anthropic's stable breakpoint goes by the model's cache minimum in tokens,
    and what the model takes is the server's registry's word (else the packaged registry's)."""
    cacheable = (
        None if models is None else await anthropic_stable_cacheable(models, provider, chat_request, options)
    )
    return await asyncio.to_thread(
        partial(render, provider, chat_request, options, anthropic_stable_cacheable=cacheable, models=models)
    )
