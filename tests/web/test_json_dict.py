"""The console's JSON answers are the runtime's protobuf JSON, field for field, for every message
of the contract with every field set (json_dict.py writes most of them itself, faster)."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

import pioneer_grpc.v1
from pioneer_grpc.server.web.json_dict import message_dict

F = FieldDescriptor
DEPTH = 3


def _messages() -> list[type[Message]]:
    found: dict[str, type[Message]] = {}
    for module in pkgutil.iter_modules(pioneer_grpc.v1.__path__):
        if module.name.endswith("_pb2"):
            loaded = importlib.import_module(f"pioneer_grpc.v1.{module.name}")
            for name in loaded.DESCRIPTOR.message_types_by_name:
                found[f"{module.name}.{name}"] = getattr(loaded, name)
    return [found[name] for name in sorted(found)]


def _value(field: Any, n: int) -> Any:
    """A value of `field` other than its default, different for each n, at the edges of its type."""
    kind = field.cpp_type
    if kind == F.CPPTYPE_ENUM:
        numbers = [v.number for v in field.enum_type.values]
        # The last value named, and one the enum does not name (an open enum keeps it as a number).
        return numbers[-1] if n == 0 else max(numbers) + 7
    if field.type == F.TYPE_BYTES:
        return bytes([0, 255, n, 62, 63])
    if kind == F.CPPTYPE_STRING:
        return f'é "{n}" \n 日本'
    if kind == F.CPPTYPE_BOOL:
        return True
    if kind in (F.CPPTYPE_INT64, F.CPPTYPE_UINT64):
        return 2**62 + n
    if kind in (F.CPPTYPE_INT32, F.CPPTYPE_UINT32):
        return 2**30 + n
    if kind == F.CPPTYPE_DOUBLE:
        return [0.1, float("inf"), float("nan"), -float("inf")][n % 4]
    if kind == F.CPPTYPE_FLOAT:
        return 0.1
    raise AssertionError(kind)


def _fill(message: Message, depth: int = 0) -> Message:
    """`message` with every field set (a oneof's last member wins), messages to DEPTH levels."""
    descriptor: Any = message.DESCRIPTOR
    for field in descriptor.fields:
        target = getattr(message, field.name)
        if field.cpp_type == F.CPPTYPE_MESSAGE:
            if depth >= DEPTH:
                continue
            if field.message_type.GetOptions().map_entry:
                entry = field.message_type.fields_by_name
                key, value = entry["key"], entry["value"]
                if value.cpp_type == F.CPPTYPE_MESSAGE:
                    _fill(target[_value(key, 0)], depth + 1)
                else:
                    target[_value(key, 0)] = _value(value, 0)
            elif field.message_type.full_name == "google.protobuf.Timestamp":
                for _ in range(2 if field.is_repeated else 1):
                    stamp = target.add() if field.is_repeated else target
                    stamp.FromJsonString("2026-11-02T08:19:41.123456Z")
            elif field.is_repeated:
                _fill(target.add(), depth + 1)
                _fill(target.add(), depth + 1)
            else:
                _fill(target, depth + 1)
        elif field.is_repeated:
            target.extend([_value(field, n) for n in range(4)])
        else:
            setattr(message, field.name, _value(field, 1 if field.cpp_type == F.CPPTYPE_DOUBLE else 0))
    return message


MESSAGES = _messages()


def test_the_contract_has_messages_to_compare() -> None:
    assert len(MESSAGES) > 50


@pytest.mark.parametrize("message_class", MESSAGES, ids=lambda m: m.DESCRIPTOR.full_name)
def test_every_field_is_written_as_the_runtime_writes_it(message_class: type[Message]) -> None:
    full = _fill(message_class())
    assert message_dict(full) == json_format.MessageToDict(full)
    assert message_dict(message_class()) == json_format.MessageToDict(message_class()) == {}
