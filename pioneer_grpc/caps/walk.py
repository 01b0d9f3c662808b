"""The cap checker: one table of caps, walked over a request message by field path.

A table maps a message's full name to its fields' caps. The walk is iterative
(a message nested as deep as protobuf allows costs no Python recursion), visits
only the fields a client set, never descends into a repeated field that is over
its count cap, and stops after REPORTED_VIOLATIONS, so a hostile request costs
at most one pass over what it sent. Every string is also refused when it holds
a NUL character: PostgreSQL text cannot store one, and both backends must give
the same answer.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from pioneer_grpc.errors import FieldViolation

# A request with more bad fields than this names only these; the rest are not looked at.
REPORTED_VIOLATIONS = 100
NUL_PROBLEM = "must not contain a NUL character"

# A JSON string literal, possessive so an unterminated one ends the scan instead of backtracking.
_JSON_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*+"?|[\[\]{}]')
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


@dataclass(frozen=True)
class Cap:
    """Caps of one field; None means not capped in that way."""

    # A repeated field: most elements.
    items: int | None = None
    # A string: most characters; bytes: most bytes; a google.protobuf.Struct: most serialized bytes.
    size: int | None = None
    # A string holding JSON: deepest nesting of arrays and objects.
    json_depth: int | None = None
    # A string holding a path: most "/"-separated components.
    path_parts: int | None = None
    # An integer: from 0 to this value.
    max_value: int | None = None


# Message full name -> field name -> cap.
CapTable = Mapping[str, Mapping[str, Cap]]
# Well-known messages checked by size alone, never walked.
OPAQUE = frozenset({"google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"})


def json_depth_over(text: str, limit: int) -> bool:
    """True when arrays and objects nest deeper than `limit` in `text` (strings skipped); no recursion."""
    if text.count("[") + text.count("{") <= limit:
        return False
    brackets = (m for m in _JSON_STRING_OR_BRACKET.findall(text) if m in _DEPTH_STEP)
    return max(itertools.accumulate(_DEPTH_STEP[b] for b in brackets), default=0) > limit


def path_parts(path: str) -> int:
    return sum(1 for part in path.split("/") if part and part != ".")


def text_violation(field: str, value: str, cap: Cap) -> FieldViolation | None:
    """The first problem of one string against its cap (and the NUL rule), or None."""
    if cap.size is not None and len(value) > cap.size:
        return FieldViolation(field, f"at most {cap.size:,} characters (got {len(value):,})")
    if "\x00" in value:
        return FieldViolation(field, NUL_PROBLEM)
    if cap.path_parts is not None and path_parts(value) > cap.path_parts:
        return FieldViolation(field, f"at most {cap.path_parts} path components (got {path_parts(value):,})")
    if cap.json_depth is not None and json_depth_over(value, cap.json_depth):
        return FieldViolation(field, f"JSON nested at most {cap.json_depth} levels deep")
    return None


def _scalar_violation(
    field: str, descriptor: FieldDescriptor, value: object, cap: Cap
) -> FieldViolation | None:
    if descriptor.type == FieldDescriptor.TYPE_STRING:
        assert isinstance(value, str)
        return text_violation(field, value, cap)
    if descriptor.type == FieldDescriptor.TYPE_BYTES and cap.size is not None:
        assert isinstance(value, bytes)
        if len(value) > cap.size:
            return FieldViolation(field, f"at most {cap.size:,} bytes (got {len(value):,})")
    if cap.max_value is not None and isinstance(value, int) and not 0 <= value <= cap.max_value:
        return FieldViolation(field, f"from 0 to {cap.max_value:,} (got {value:,})")
    return None


def _opaque_violation(field: str, value: Message, cap: Cap) -> FieldViolation | None:
    if cap.size is not None and value.ByteSize() > cap.size:
        return FieldViolation(field, f"at most {cap.size:,} bytes serialized (got {value.ByteSize():,})")
    return None


def _field_problems(
    message: Message,
    prefix: str,
    table: CapTable,
    children: list[tuple[Message, str]],
    skip: Collection[str],
) -> Iterator[FieldViolation]:
    caps = table.get(message.DESCRIPTOR.full_name, {})
    for descriptor, value in message.ListFields():
        if descriptor.name in skip:
            continue
        field = f"{prefix}.{descriptor.name}" if prefix else descriptor.name
        cap = caps.get(descriptor.name, Cap())
        if descriptor.is_repeated:
            if cap.items is not None and len(value) > cap.items:
                yield FieldViolation(field, f"at most {cap.items:,} items (got {len(value):,})")
                continue
            elements = [(f"{field}[{i}]", element) for i, element in enumerate(value)]
        else:
            elements = [(field, value)]
        for path, element in elements:
            found = _element_problem(path, descriptor, element, cap, children)
            if found is not None:
                yield found


def _element_problem(
    path: str, descriptor: FieldDescriptor, element: object, cap: Cap, children: list[tuple[Message, str]]
) -> FieldViolation | None:
    if descriptor.message_type is None:
        return _scalar_violation(path, descriptor, element, cap)
    assert isinstance(element, Message)
    if descriptor.message_type.full_name in OPAQUE:
        return _opaque_violation(path, element, cap)
    children.append((element, path))
    return None


def cap_violations(
    message: Message, prefix: str, table: CapTable, skip: Collection[str] = ()
) -> list[FieldViolation]:
    """Every field of `message` (named `prefix.field[i]...`) over its cap, in field order.

    `skip` names fields of `message` itself (not of its children) that are not looked at.
    """
    found: list[FieldViolation] = []
    pending: list[tuple[Message, str]] = [(message, prefix)]
    top = True
    while pending and len(found) < REPORTED_VIOLATIONS:
        current, path = pending.pop()
        children: list[tuple[Message, str]] = []
        problems = _field_problems(current, path, table, children, skip if top else ())
        found.extend(itertools.islice(problems, REPORTED_VIOLATIONS))
        pending.extend(reversed(children))
        top = False
    return found[:REPORTED_VIOLATIONS]


def describe(cap: Cap) -> str:
    """The cap as its proto comment states it, e.g. `Cap: at most 200 characters.`"""
    parts = []
    if cap.items is not None:
        parts.append(f"at most {cap.items:,} items")
    if cap.size is not None:
        each = "each " if cap.items is not None else ""
        parts.append(f"{each}at most {cap.size:,} characters")
    if cap.path_parts is not None:
        parts.append(f"at most {cap.path_parts} path components")
    if cap.json_depth is not None:
        parts.append(f"JSON nested at most {cap.json_depth} levels deep")
    if cap.max_value is not None:
        parts.append(f"from 0 to {cap.max_value:,}")
    return "Cap: " + ", ".join(parts) + "."
