"""Request caps: every repeated field and long string a client can send has one.

Checked before any work, by walking the request (walk.cap_violations) against
the one table (table.CAPS); the constants live by concern in history.py,
chat.py and prompt.py, and each is documented on its field in protos/.

    InvalidArgument.raise_if(violations_of(request.input, "input"))
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from google.protobuf.message import Message

from pioneer_grpc.caps.table import CAPS, ID, PATH
from pioneer_grpc.caps.walk import (
    NUL_PROBLEM,
    REPORTED_VIOLATIONS,
    Cap,
    cap_violations,
    json_depth_over,
    text_violation,
)
from pioneer_grpc.errors import FieldViolation

__all__ = [
    "ID",
    "NUL_PROBLEM",
    "PATH",
    "Cap",
    "json_depth_over",
    "text_violation",
    "violations_of",
    "violations_of_each",
]


def violations_of(message: Message, prefix: str = "", skip: Collection[str] = ()) -> list[FieldViolation]:
    """Every field of `message` over its cap, named from `prefix`, but for its own fields in `skip`."""
    return cap_violations(message, prefix, CAPS, skip)


def violations_of_each(messages: Sequence[Message], prefix: str, max_items: int) -> list[FieldViolation]:
    """A repeated field passed as a list: its count, then each element, named `prefix[i].field`."""
    if len(messages) > max_items:
        return [FieldViolation(prefix, f"at most {max_items:,} items (got {len(messages):,})")]
    found: list[FieldViolation] = []
    for i, message in enumerate(messages):
        found += violations_of(message, f"{prefix}[{i}]")
        if len(found) >= REPORTED_VIOLATIONS:
            break
    return found[:REPORTED_VIOLATIONS]
