"""google.rpc error details as Connect error details a person can read.

Connect's error JSON carries each detail as `type` and base64 `value`, and an
optional `debug` with the detail's JSON form, which the runtime fills only for a
detail it holds as a message of its own protobuf library. The servicers build
google.rpc.Status with the google.protobuf runtime, so the error detail types
(ErrorInfo, BadRequest, ...) are rebuilt here once for the Connect runtime from
the same descriptors, and each detail is decoded into one: `debug` then shows
the reason and the field violations, while `type` and `value` stay as sent.
"""

from __future__ import annotations

from functools import cache

from connectrpc.errors import ErrorDetail
from google.protobuf import any_pb2, descriptor_pb2, duration_pb2
from google.protobuf.descriptor import FileDescriptor
from google.rpc import error_details_pb2
from protobuf import Registry
from protobuf._file_registry import create_file_registry
from protobuf.wkt import Any as WireAny
from protobuf.wkt import FileDescriptorProto


def _lower_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _with_json_names(messages: list[descriptor_pb2.DescriptorProto]) -> None:
    # Generated descriptors omit json_name (protoc fills it only for plugins); the JSON form needs it.
    for message in messages:
        for field in message.field:
            if not field.HasField("json_name"):
                field.json_name = _lower_camel(field.name)
        _with_json_names(list(message.nested_type))


def _file_proto(file: FileDescriptor) -> FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto()
    file.CopyToProto(proto)
    _with_json_names(list(proto.message_type))
    return FileDescriptorProto.from_binary(proto.SerializeToString())


@cache
def _registry() -> Registry:
    imports = {duration_pb2.DESCRIPTOR.name: duration_pb2.DESCRIPTOR}
    return create_file_registry(
        _file_proto(error_details_pb2.DESCRIPTOR),
        lambda path: _file_proto(imports[path]) if path in imports else None,
    )


def readable_detail(detail: any_pb2.Any) -> ErrorDetail:
    """The Connect detail of a packed google.rpc detail; with its JSON form when the type is known."""
    packed = WireAny(type_url=detail.type_url, value=detail.value)
    found = ErrorDetail(packed).value(_registry())
    return ErrorDetail(found if found is not None else packed)
