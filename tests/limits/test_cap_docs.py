"""Each cap of the table is stated in the comment of its field in protos/, in the same words."""

from __future__ import annotations

import re
from pathlib import Path

from google.protobuf import descriptor_pool
from google.protobuf.descriptor import FieldDescriptor

import pioneer_grpc.v1.turn_service_pb2  # noqa: F401  (registers every contract message)
from pioneer_grpc.caps.table import CAPS
from pioneer_grpc.caps.walk import describe

PROTOS = Path(__file__).resolve().parents[2] / "protos" / "pioneer" / "v1"
FIELD = re.compile(r"^\s*(?:optional |repeated )?[\w.]+ (\w+) = \d+(?: \[.*\])?;")
BLOCK = re.compile(r"^\s*(message|oneof|enum) (\w+) \{")


def _field_comments() -> dict[tuple[str, str], str]:
    """(message, field) -> the comment lines right above the field."""
    found: dict[tuple[str, str], str] = {}
    for path in PROTOS.glob("*.proto"):
        stack: list[str | None] = []
        comment: list[str] = []
        for line in path.read_text().splitlines():
            block = BLOCK.match(line)
            field = FIELD.match(line)
            if block:
                stack.append(block.group(2) if block.group(1) == "message" else None)
            elif line.strip().startswith("}") and stack:
                stack.pop()
            elif field and stack:
                message = next(name for name in reversed(stack) if name)
                found[(f"pioneer.v1.{message}", field.group(1))] = "\n".join(comment)
            comment = [*comment, line.strip()] if line.strip().startswith("//") else []
    return found


def _stated(message: str, field: str) -> str:
    cap = CAPS[message][field]
    text = describe(cap)
    descriptor = descriptor_pool.Default().FindMessageTypeByName(message).fields_by_name[field]
    if descriptor.message_type is not None:  # google.protobuf.Struct
        return text.replace("characters", "bytes serialized")
    if descriptor.type == FieldDescriptor.TYPE_BYTES:
        return text.replace("characters", "bytes")
    return text


def test_every_cap_is_documented_on_its_field() -> None:
    comments = _field_comments()
    missing = [
        f"{message}.{field}: {_stated(message, field)}"
        for message, fields in CAPS.items()
        if message.startswith("pioneer.v1.")
        for field in fields
        if _stated(message, field) not in comments.get((message, field), "")
    ]
    assert missing == []
