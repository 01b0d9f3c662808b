"""ProviderService: render a ChatRequest into one provider's request body."""

from __future__ import annotations

import grpc

from pioneer_grpc import wire
from pioneer_grpc.providers.render import RenderedRequest
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.provider import render_chat
from pioneer_grpc.v1 import provider_service_pb2, provider_service_pb2_grpc

BODY_JSON_FIELD = provider_service_pb2.RenderChatRequestResponse.DESCRIPTOR.fields_by_name["body_json"].number


class ProviderServicer(provider_service_pb2_grpc.ProviderServiceServicer):
    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx

    async def RenderChatRequest(
        self,
        request: provider_service_pb2.RenderChatRequestRequest,
        context: grpc.aio.ServicerContext,
    ) -> bytes:
        options = request.options if request.HasField("options") else None
        rendered = await render_chat(request.provider, request.chat_request, options, self.ctx.models)
        return _encoded(rendered)


def _encoded(rendered: RenderedRequest) -> bytes:
    """The response as bytes (pioneer_grpc/wire.py): the body, already UTF-8, joined as it is."""
    head = provider_service_pb2.RenderChatRequestResponse(
        path=rendered.path,
        cache_breakpoints=rendered.cache_breakpoints,
        notices=[
            provider_service_pb2.RenderNotice(code=n.code, message=n.message, field=n.field)
            for n in rendered.notices
        ],
    )
    return head.SerializeToString() + wire.field_record(BODY_JSON_FIELD, rendered.body)
