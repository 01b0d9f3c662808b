"""Rendering a ChatRequest for one provider: checking and building the body are CPU work of their
own (a request at its caps is megabytes), so they run in a worker thread, off the event loop."""

from __future__ import annotations

import asyncio
from functools import partial

from pioneer_grpc.models.registry import Registry
from pioneer_grpc.providers.render import RenderedRequest, render
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2


async def render_chat(
    provider: provider_service_pb2.Provider,
    chat_request: chat_pb2.ChatRequest,
    options: provider_service_pb2.RenderOptions | None,
    models: Registry | None = None,
) -> RenderedRequest:
    """With `models`, cache breakpoints go by the model's minimum in tokens, and what the model
    takes, by the server's registry (else the packaged registry's)."""
    return await asyncio.to_thread(partial(render, provider, chat_request, options, models=models))
