"""Every cap of the table, at and past its limit; and no field a client can send is left uncapped."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from google.protobuf import struct_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from pioneer_grpc.caps import NUL_PROBLEM, json_depth_over, violations_of
from pioneer_grpc.caps.table import CAPS
from pioneer_grpc.caps.walk import OPAQUE, REPORTED_VIOLATIONS, Cap
from pioneer_grpc.v1 import (
    history_service_pb2,
    manifest_service_pb2,
    prompt_compiler_service_pb2,
    provider_service_pb2,
    turn_service_pb2,
)

SERVICES = [
    history_service_pb2,
    manifest_service_pb2,
    prompt_compiler_service_pb2,
    provider_service_pb2,
    turn_service_pb2,
]


def _reachable() -> Iterator[Descriptor]:
    """Every message type a client can send, starting from each RPC's request."""
    pending = [
        m.input_type
        for module in SERVICES
        for s in module.DESCRIPTOR.services_by_name.values()
        for m in s.methods
    ]
    seen: set[str] = set()
    while pending:
        descriptor = pending.pop()
        if descriptor.full_name in seen or descriptor.full_name in OPAQUE:
            continue
        seen.add(descriptor.full_name)
        yield descriptor
        pending += [f.message_type for f in descriptor.fields if f.message_type is not None]


def _text_like(field: FieldDescriptor) -> bool:
    return field.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES) or (
        field.message_type is not None and field.message_type.full_name in OPAQUE
    )


def test_every_string_bytes_and_repeated_field_a_client_sends_has_a_cap() -> None:
    missing = []
    for descriptor in _reachable():
        caps = CAPS.get(descriptor.full_name, {})
        for field in descriptor.fields:
            cap = caps.get(field.name, Cap())
            if field.is_repeated and cap.items is None:
                missing.append(f"{descriptor.full_name}.{field.name} (count)")
            if _text_like(field) and cap.size is None:
                missing.append(f"{descriptor.full_name}.{field.name} (size)")
    assert missing == []


CASES = [
    pytest.param(message, field, cap, id=f"{message.removeprefix('pioneer.v1.')}.{field}")
    for message, fields in CAPS.items()
    for field, cap in fields.items()
]


def _descriptor(message: str) -> Descriptor:
    from google.protobuf import descriptor_pool

    return descriptor_pool.Default().FindMessageTypeByName(message)


def _fill(target: Message, field: FieldDescriptor, value: object) -> None:
    if field.is_repeated:
        getattr(target, field.name).append(value) if not isinstance(value, Message) else getattr(
            target, field.name
        ).add().CopyFrom(value)
    elif isinstance(value, Message):
        getattr(target, field.name).CopyFrom(value)
    else:
        setattr(target, field.name, value)


def _scalar(field: FieldDescriptor, size: int) -> object:
    if field.type == FieldDescriptor.TYPE_BYTES:
        return b"a" * size
    if field.message_type is not None and field.message_type.full_name == "google.protobuf.Struct":
        struct = struct_pb2.Struct()
        struct["k"] = "a" * size
        # Take off the framing (tags, lengths, the key) so the whole serializes to exactly `size`.
        struct["k"] = "a" * (2 * size - struct.ByteSize())
        assert struct.ByteSize() == size
        return struct
    return "a" * size


def _with(message: str, field_name: str, **kwargs: object) -> tuple[Message, FieldDescriptor]:
    descriptor = _descriptor(message)
    field = descriptor.fields_by_name[field_name]
    return GetMessageClass(descriptor)(), field


def _problems(value: Message) -> list[tuple[str, str]]:
    return [(v.field, v.description) for v in violations_of(value, "r")]


@pytest.mark.parametrize(("message", "field_name", "cap"), CASES)
def test_cap_at_and_past_its_limit(message: str, field_name: str, cap: Cap) -> None:
    value, field = _with(message, field_name)
    path = f"r.{field_name}"
    if cap.items is not None:
        element: object = (
            GetMessageClass(field.message_type)() if field.message_type is not None else _scalar(field, 1)
        )
        for _ in range(cap.items):
            _fill(value, field, element)
        assert _problems(value) == []
        _fill(value, field, element)
        assert _problems(value) == [(path, f"at most {cap.items:,} items (got {cap.items + 1:,})")]
        return
    if cap.max_value is not None:
        for fine in (0, cap.max_value):
            _fill(value, field, fine)
            assert _problems(value) == []
        for bad in (-1, cap.max_value + 1):
            _fill(value, field, bad)
            assert _problems(value) == [(path, f"from 0 to {cap.max_value:,} (got {bad:,})")]
        return
    assert cap.size is not None
    at_limit = _scalar(field, cap.size)
    _fill(value, field, at_limit)
    assert _problems(value) == []
    value.Clear()
    _fill(value, field, _scalar(field, cap.size + 1))
    (problem,) = _problems(value)
    assert problem[0] == path
    assert f"at most {cap.size:,}" in problem[1]


STRING_CASES = [
    case
    for case in CASES
    if _descriptor(case.values[0]).fields_by_name[case.values[1]].type == FieldDescriptor.TYPE_STRING
]


@pytest.mark.parametrize(("message", "field_name", "cap"), STRING_CASES)
def test_nul_is_refused_in_every_string(message: str, field_name: str, cap: Cap) -> None:
    value, field = _with(message, field_name)
    _fill(value, field, "a\x00b")
    suffix = "[0]" if field.is_repeated else ""
    assert _problems(value) == [(f"r.{field_name}{suffix}", NUL_PROBLEM)]


PATH_CASES = [case for case in CASES if case.values[2].path_parts is not None]
DEPTH_CASES = [case for case in CASES if case.values[2].json_depth is not None]


@pytest.mark.parametrize(("message", "field_name", "cap"), PATH_CASES)
def test_path_components_at_and_past_the_cap(message: str, field_name: str, cap: Cap) -> None:
    assert cap.path_parts is not None
    value, field = _with(message, field_name)
    _fill(value, field, "d/" * cap.path_parts)
    assert _problems(value) == []
    _fill(value, field, "d/" * (cap.path_parts + 1))
    assert _problems(value) == [
        (f"r.{field_name}", f"at most {cap.path_parts} path components (got {cap.path_parts + 1})")
    ]


@pytest.mark.parametrize(("message", "field_name", "cap"), DEPTH_CASES)
def test_json_depth_at_and_past_the_cap(message: str, field_name: str, cap: Cap) -> None:
    assert cap.json_depth is not None
    value, field = _with(message, field_name)
    depth = cap.json_depth
    _fill(value, field, '{"a":' * (depth - 1) + "[1]" + "}" * (depth - 1))
    assert _problems(value) == []
    _fill(value, field, "[" * (depth + 1) + "]" * (depth + 1))
    assert _problems(value) == [(f"r.{field_name}", f"JSON nested at most {depth} levels deep")]


@pytest.mark.parametrize(
    ("text", "deeper_than_2"),
    [
        ("[[[]]]", True),
        ("[[]]", False),
        ('["[[[[", {"a": "]]]"}]', False),  # brackets inside strings do not count
        ('["\\"[[[["]', False),  # nor after an escaped quote
        ('"unterminated [[[[[', False),
        ("[" * 100_000, True),
        ("[]" * 100_000, False),
    ],
)
def test_json_depth_scan(text: str, deeper_than_2: bool) -> None:
    assert json_depth_over(text, 2) is deeper_than_2


def test_a_request_with_many_bad_fields_names_a_bounded_number() -> None:
    request = history_service_pb2.CountTokensRequest(texts=["\x00"] * 900)
    assert len(violations_of(request)) == REPORTED_VIOLATIONS


def test_skipped_fields_are_only_the_messages_own() -> None:
    request = turn_service_pb2.PrepareTurnRequest(thread_id="t\x00", turn_id="u")
    request.compile_input.extra_system = "x\x00"
    request.new_entries.add(entry_id="e\x00")
    everything = [v.field for v in violations_of(request)]
    assert everything == ["thread_id", "new_entries[0].entry_id", "compile_input.extra_system"]
    skipped = [v.field for v in violations_of(request, skip=("compile_input",))]
    assert skipped == ["thread_id", "new_entries[0].entry_id"]
    # A child's field of the same name is still walked.
    nested = [v.field for v in violations_of(request, skip=("entry_id",))]
    assert nested == everything
