"""PromptCompilerService: converts requests and delegates to service/compile.py."""

from __future__ import annotations

import grpc

from pioneer_grpc.service import compile as compile_service
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.v1 import prompt_compiler_service_pb2 as service_pb2
from pioneer_grpc.v1 import prompt_compiler_service_pb2_grpc as service_grpc


class PromptCompilerServicer(service_grpc.PromptCompilerServiceServicer):
    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx

    async def CompilePrompt(
        self, request: service_pb2.CompilePromptRequest, context: grpc.aio.ServicerContext
    ) -> service_pb2.CompilePromptResponse:
        response = service_pb2.CompilePromptResponse()
        response.manifest_event_id = await compile_service.compile_prompt(
            self.ctx, request.input, response.payload, request.thread_id, request.turn_id
        )
        return response

    async def EnsureBootstrapFiles(
        self, request: service_pb2.EnsureBootstrapFilesRequest, context: grpc.aio.ServicerContext
    ) -> service_pb2.EnsureBootstrapFilesResponse:
        outcomes = await compile_service.ensure_bootstrap(self.ctx, request.workspace_root)
        return service_pb2.EnsureBootstrapFilesResponse(
            files=[
                service_pb2.BootstrapFile(name=name, path=str(path), created=created)
                for name, path, created in outcomes
            ]
        )
