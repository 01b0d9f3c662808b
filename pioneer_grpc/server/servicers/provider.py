"""ProviderService: render a ChatRequest into one provider's request body."""

from __future__ import annotations

import grpc

from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.provider import render_chat
from pioneer_grpc.v1 import provider_service_pb2, provider_service_pb2_grpc


class ProviderServicer(provider_service_pb2_grpc.ProviderServiceServicer):
    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx

    async def RenderChatRequest(
        self,
        request: provider_service_pb2.RenderChatRequestRequest,
        context: grpc.aio.ServicerContext,
    ) -> provider_service_pb2.RenderChatRequestResponse:
        options = request.options if request.HasField("options") else None
        rendered = await render_chat(request.provider, request.chat_request, options, self.ctx.models)
        return provider_service_pb2.RenderChatRequestResponse(
            body_json=rendered.body_json,
            path=rendered.path,
            cache_breakpoints=rendered.cache_breakpoints,
            notices=[
                provider_service_pb2.RenderNotice(code=n.code, message=n.message, field=n.field)
                for n in rendered.notices
            ],
        )
