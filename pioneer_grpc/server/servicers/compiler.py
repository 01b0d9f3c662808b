"""PromptCompilerService: convert, delegate to the compiler core in a worker thread, persist."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc

from pioneer_grpc.compiler import ensure_bootstrap_files
from pioneer_grpc.compiler.fsview import FsView
from pioneer_grpc.compiler.paths import resolve_homes, resolve_workspace_root
from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.server.context import ServerContext
from pioneer_grpc.v1 import prompt_compiler_service_pb2 as service_pb2
from pioneer_grpc.v1 import prompt_compiler_service_pb2_grpc as service_grpc


class PromptCompilerServicer(service_grpc.PromptCompilerServiceServicer):
    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx

    async def CompilePrompt(
        self, request: service_pb2.CompilePromptRequest, context: grpc.aio.ServicerContext
    ) -> service_pb2.CompilePromptResponse:
        if bool(request.thread_id) != bool(request.turn_id):
            missing = "turn_id" if request.thread_id else "thread_id"
            raise InvalidArgument.field(missing, "thread_id and turn_id are set together or not at all")
        response = await asyncio.to_thread(self._compile, request)
        if self.ctx.manifests is not None and request.thread_id:
            response.manifest_event_id = await self.ctx.manifests.record(
                request.thread_id, request.turn_id, response.payload.manifest
            )
        return response

    def _compile(self, request: service_pb2.CompilePromptRequest) -> service_pb2.CompilePromptResponse:
        """Runs in a worker thread: the compile (or the cache check) reads files."""
        response = service_pb2.CompilePromptResponse()
        self.ctx.compile_cache.compile_into(
            response.payload,
            request.input,
            self.ctx.config.homes,
            thread_id=request.thread_id,
            turn_id=request.turn_id,
        )
        return response

    async def EnsureBootstrapFiles(
        self, request: service_pb2.EnsureBootstrapFilesRequest, context: grpc.aio.ServicerContext
    ) -> service_pb2.EnsureBootstrapFilesResponse:
        outcomes = await asyncio.to_thread(_ensure_in, request.workspace_root, self.ctx.config.homes)
        return service_pb2.EnsureBootstrapFilesResponse(
            files=[
                service_pb2.BootstrapFile(name=name, path=str(path), created=created)
                for name, path, created in outcomes
            ]
        )


def _ensure_in(workspace_root: str, homes: list[Path]) -> list[tuple[str, Path, bool]]:
    folder = resolve_workspace_root(workspace_root, resolve_homes(homes, FsView()), field="workspace_root")
    return ensure_bootstrap_files(folder)
