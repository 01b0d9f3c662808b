"""Server reflection, v1 and v1alpha, answered from the descriptor set built with source info.

grpcio-reflection serves v1alpha only and re-serializes descriptors without
their comments. Here the pioneer.v1 files (and their imports) come as protoc
wrote them with --include_source_info, so `grpcurl describe` shows the
contract's comments; other files (health, reflection itself) come from the
default pool. The v1 and v1alpha protocols differ only in package name, so one
handler built on the v1alpha messages answers both.

The google.rpc files the error details come from (status.proto, error_details.proto:
ErrorInfo, BadRequest, ...) are served too: a client that decodes the
grpc-status-details-bin trailer through reflection, as grpcurl does, resolves each
detail's type URL to a message and prints its fields instead of opaque bytes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from importlib import resources
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from google.rpc import error_details_pb2, status_pb2
from grpc_reflection.v1alpha import reflection_pb2 as rpb

V1 = "grpc.reflection.v1.ServerReflection"
V1ALPHA = "grpc.reflection.v1alpha.ServerReflection"
DESCRIPTOR_SET = "descriptor_set.binpb"
# The files of the messages carried in google.rpc.Status details of every error.
ERROR_DETAIL_FILES = (status_pb2.DESCRIPTOR, error_details_pb2.DESCRIPTOR)


def _v1_file() -> descriptor_pb2.FileDescriptorProto:
    """reflection.proto renamed to grpc.reflection.v1: the same messages under the new package."""
    proto = descriptor_pb2.FileDescriptorProto()
    rpb.DESCRIPTOR.CopyToProto(proto)
    proto.name = "grpc/reflection/v1/reflection.proto"
    proto.package = "grpc.reflection.v1"

    def renamed(type_name: str) -> str:
        return type_name.replace(".grpc.reflection.v1alpha.", ".grpc.reflection.v1.")

    for message in proto.message_type:
        for field in message.field:
            if field.type_name:
                field.type_name = renamed(field.type_name)
    for service in proto.service:
        for method in service.method:
            method.input_type = renamed(method.input_type)
            method.output_type = renamed(method.output_type)
    return proto


class Reflection:
    """Indexes files by name; symbols are looked up in a pool built from the same files."""

    def __init__(self, service_names: Iterable[str], extra_files: Iterable[Any] = ()) -> None:
        self.service_names = sorted({*service_names, V1, V1ALPHA})
        files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
        stored = resources.files("pioneer_grpc.v1").joinpath(DESCRIPTOR_SET).read_bytes()
        for proto in descriptor_pb2.FileDescriptorSet.FromString(stored).file:
            files[proto.name] = proto
        for descriptor in (*extra_files, *ERROR_DETAIL_FILES):
            self._add_with_dependencies(descriptor, files)
        v1 = _v1_file()
        files[v1.name] = v1
        self._files = files
        self._pool = descriptor_pool.DescriptorPool()
        added: set[str] = set()
        for name in files:
            self._add_to_pool(name, added)

    def _add_with_dependencies(
        self, descriptor: Any, files: dict[str, descriptor_pb2.FileDescriptorProto]
    ) -> None:
        if descriptor.name in files:
            return
        proto = descriptor_pb2.FileDescriptorProto()
        descriptor.CopyToProto(proto)
        files[descriptor.name] = proto
        for dependency in descriptor.dependencies:
            self._add_with_dependencies(dependency, files)

    def _add_to_pool(self, name: str, added: set[str]) -> None:
        if name in added:
            return
        added.add(name)
        for dependency in self._files[name].dependency:
            self._add_to_pool(dependency, added)
        self._pool.Add(self._files[name])

    def _file_response(self, name: str) -> rpb.FileDescriptorResponse:
        ordered: list[str] = []

        def visit(current: str) -> None:
            if current in ordered:
                return
            ordered.append(current)
            for dependency in self._files[current].dependency:
                visit(dependency)

        visit(name)
        return rpb.FileDescriptorResponse(
            file_descriptor_proto=[self._files[n].SerializeToString() for n in ordered]
        )

    def _file_of_symbol(self, symbol: str) -> str:
        """The file declaring `symbol`; a method, field or enum value is found through its parent."""
        name = symbol
        while True:
            try:
                return str(self._pool.FindFileContainingSymbol(name).name)
            except KeyError:
                name, dot, _ = name.rpartition(".")
                if not dot or name.count(".") < 1:
                    raise KeyError(symbol) from None

    def answer(self, request: rpb.ServerReflectionRequest) -> rpb.ServerReflectionResponse:
        response = rpb.ServerReflectionResponse(valid_host=request.host, original_request=request)
        try:
            kind = request.WhichOneof("message_request")
            if kind == "file_by_filename":
                if request.file_by_filename not in self._files:
                    raise KeyError(request.file_by_filename)
                response.file_descriptor_response.CopyFrom(self._file_response(request.file_by_filename))
            elif kind == "file_containing_symbol":
                found = self._file_of_symbol(request.file_containing_symbol)
                response.file_descriptor_response.CopyFrom(self._file_response(found))
            elif kind == "file_containing_extension":
                ask = request.file_containing_extension
                extension = self._pool.FindExtensionByNumber(
                    self._pool.FindMessageTypeByName(ask.containing_type), ask.extension_number
                )
                response.file_descriptor_response.CopyFrom(
                    self._file_response(self._file_of_symbol(extension.full_name))
                )
            elif kind == "all_extension_numbers_of_type":
                message = self._pool.FindMessageTypeByName(request.all_extension_numbers_of_type)
                response.all_extension_numbers_response.base_type_name = message.full_name
                response.all_extension_numbers_response.extension_number.extend(
                    sorted(e.number for e in self._pool.FindAllExtensions(message))
                )
            elif kind == "list_services":
                response.list_services_response.service.extend(
                    rpb.ServiceResponse(name=name) for name in self.service_names
                )
            else:
                response.error_response.error_code = grpc.StatusCode.INVALID_ARGUMENT.value[0]
                response.error_response.error_message = "no request kind set"
        except KeyError as exc:
            response.ClearField("file_descriptor_response")
            response.error_response.error_code = grpc.StatusCode.NOT_FOUND.value[0]
            response.error_response.error_message = f"not found: {exc.args[0] if exc.args else ''}"
        return response

    async def serve(
        self, requests: AsyncIterator[rpb.ServerReflectionRequest], _context: grpc.aio.ServicerContext
    ) -> AsyncIterator[rpb.ServerReflectionResponse]:
        async for request in requests:
            yield self.answer(request)

    def add_to(self, server: grpc.aio.Server) -> None:
        handler = grpc.stream_stream_rpc_method_handler(
            self.serve,
            request_deserializer=rpb.ServerReflectionRequest.FromString,
            response_serializer=rpb.ServerReflectionResponse.SerializeToString,
        )
        server.add_generic_rpc_handlers(
            [
                grpc.method_handlers_generic_handler(service, {"ServerReflectionInfo": handler})
                for service in (V1, V1ALPHA)
            ]
        )
