"""One client method per RPC, derived from the pioneer.v1 service descriptors.

A new RPC in protos/ becomes a method here with no code change: its name is the
RPC's in snake_case (CreateThread -> create_thread), and it takes the request
message or the request's fields as keywords. calls.py, generated from RPCS by
scripts/gen_client_methods.py (`make proto`), declares those methods with their
request and response types.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message

from pioneer_grpc.v1 import (
    echo_service_pb2,
    history_service_pb2,
    manifest_service_pb2,
    prompt_compiler_service_pb2,
    provider_service_pb2,
    turn_service_pb2,
)

# `timeout` left out: ConnectOptions.timeout for a unary call, no deadline for a stream.
DEFAULT: Any = object()
Timeout = float | None
Metadata = Sequence[tuple[str, str]]

SERVICE_MODULES = (
    history_service_pb2,
    turn_service_pb2,
    prompt_compiler_service_pb2,
    manifest_service_pb2,
    provider_service_pb2,
    echo_service_pb2,
)


@dataclass(frozen=True)
class Rpc:
    name: str  # snake_case method name on the client
    path: str  # /pioneer.v1.HistoryService/CreateThread
    request: type[Message]
    response: type[Message]
    server_streaming: bool
    # The request is a stream of messages (ImportThread): the method takes an iterable of them.
    client_streaming: bool = False

    def build(self, request: Message | None, fields: dict[str, Any]) -> Message:
        if request is not None and fields:
            raise TypeError(f"{self.name}: pass the request message or its fields, not both")
        if request is None:
            try:
                return self.request(**fields)
            except ValueError as exc:  # an unknown field name
                raise TypeError(f"{self.name}: {exc}") from None
        if not isinstance(request, self.request):
            raise TypeError(f"{self.name} takes {self.request.__name__}, got {type(request).__name__}")
        return request


def snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _rpc(service: ServiceDescriptor, method: MethodDescriptor) -> Rpc:
    return Rpc(
        name=snake_case(method.name),
        path=f"/{service.full_name}/{method.name}",
        request=message_factory.GetMessageClass(method.input_type),
        response=message_factory.GetMessageClass(method.output_type),
        server_streaming=method.server_streaming,
        client_streaming=method.client_streaming,
    )


def all_rpcs() -> dict[str, Rpc]:
    found: dict[str, Rpc] = {}
    for module in SERVICE_MODULES:
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                rpc = _rpc(service, method)
                if rpc.name in found:
                    raise RuntimeError(f"two RPCs map to the client method {rpc.name}")
                found[rpc.name] = rpc
    return found


RPCS = all_rpcs()
