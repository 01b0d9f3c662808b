"""Checks on entries a client appends, and the hash that makes appends idempotent."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pioneer_grpc.caps import NUL_PROBLEM
from pioneer_grpc.caps.history import MAX_ID_CHARS
from pioneer_grpc.errors import FieldViolation
from pioneer_grpc.history.parts import parts_blob, parts_violations
from pioneer_grpc.history.render import ROLE_NAMES
from pioneer_grpc.v1 import common_pb2, history_pb2


def id_violation(path: str, value: str, what: str = "") -> FieldViolation | None:
    """The one rule for every id a client names: not blank, at most MAX_ID_CHARS characters.

    `what` names the id in the description ("thread id is required"); without it
    the description speaks of the field ("must not be empty").
    """
    if not value.strip():
        return FieldViolation(path, f"{what} is required" if what else "must not be empty")
    if len(value) > MAX_ID_CHARS:
        subject = f"{what} is" if what else "must not be"
        return FieldViolation(path, f"{subject} longer than {MAX_ID_CHARS} characters")
    if "\x00" in value:
        return FieldViolation(path, NUL_PROBLEM)
    return None


def thread_id_violation(thread_id: str, path: str = "thread_id") -> FieldViolation | None:
    return id_violation(path, thread_id, "thread id")


def entry_violations(
    entries: list[history_pb2.ConversationEntry], prefix: str = "entries"
) -> list[FieldViolation]:
    """Every problem of every entry, named `entries[i].field`."""
    violations: list[FieldViolation] = []
    for i, entry in enumerate(entries):
        path = f"{prefix}[{i}]"
        for found in (
            id_violation(f"{path}.entry_id", entry.entry_id, "entry_id"),
            id_violation(f"{path}.turn_id", entry.turn_id, "turn_id"),
        ):
            if found is not None:
                violations.append(found)
        if entry.role not in ROLE_NAMES:
            violations.append(FieldViolation(f"{path}.role", "role must be user, assistant, tool or system"))
        violations += _tool_violations(entry, path)
        if entry.tool_calls and entry.role != history_pb2.ENTRY_ROLE_ASSISTANT:
            violations.append(FieldViolation(f"{path}.tool_calls", "only an assistant entry calls tools"))
        for j, call in enumerate(entry.tool_calls):
            found = id_violation(f"{path}.tool_calls[{j}].id", call.id, "a tool call's id")
            if found is not None:
                violations.append(found)
            if not call.name:
                violations.append(FieldViolation(f"{path}.tool_calls[{j}].name", "a tool call needs a name"))
        if len(entry.name) > MAX_ID_CHARS:
            violations.append(FieldViolation(f"{path}.name", f"longer than {MAX_ID_CHARS} characters"))
        violations += parts_violations(entry, path)
    return violations + _twice(entries, prefix)


def _tool_violations(entry: history_pb2.ConversationEntry, path: str) -> list[FieldViolation]:
    """A tool entry's call id; the failure mark, which only a tool entry (a tool's result) carries."""
    if entry.role == history_pb2.ENTRY_ROLE_TOOL:
        found = id_violation(f"{path}.tool_call_id", entry.tool_call_id, "a tool entry's tool_call_id")
        return [] if found is None else [found]
    if entry.is_error:
        return [FieldViolation(f"{path}.is_error", "only a tool entry (a tool's result) fails")]
    return []


def _twice(entries: list[history_pb2.ConversationEntry], prefix: str) -> list[FieldViolation]:
    """An entry_id sent twice in one batch: neither a repeat (nothing stored yet to match) nor two entries."""
    violations = []
    first_at: dict[str, int] = {}
    for i, entry in enumerate(entries):
        seen = first_at.setdefault(entry.entry_id, i)
        if entry.entry_id and seen != i:
            violations.append(
                FieldViolation(
                    f"{prefix}[{i}].entry_id",
                    f"entry_id {entry.entry_id!r} is also {prefix}[{seen}]'s: "
                    "each entry appears once in a request",
                )
            )
    return violations


def tool_calls_json(entry: history_pb2.ConversationEntry) -> str:
    return json.dumps(
        [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in entry.tool_calls],
        ensure_ascii=False,
        separators=(",", ":"),
    )


def artifact_refs_json(entry: history_pb2.ConversationEntry) -> str:
    return json.dumps(
        [_ref_dict(ref) for ref in entry.artifact_refs],
        ensure_ascii=False,
        sort_keys=True,
        separators=(",", ":"),
    )


def parse_tool_calls(raw: str) -> list[common_pb2.ToolCall]:
    if raw == "[]":
        return []
    return [common_pb2.ToolCall(**call) for call in json.loads(raw)]


def parse_artifact_refs(raw: str) -> list[common_pb2.ArtifactRef]:
    if raw == "[]":
        return []
    return [common_pb2.ArtifactRef(**ref) for ref in json.loads(raw)]


def _ref_dict(ref: common_pb2.ArtifactRef) -> dict[str, Any]:
    """The fields a client set (optional ones only when present), by proto field name."""
    return {f.name: value for f, value in ref.ListFields()}


def content_hash(entry: history_pb2.ConversationEntry) -> str:
    """sha256 over every client-set field: a repeat must match it to count as the same entry."""
    canonical: dict[str, Any] = {
        "turn_id": entry.turn_id,
        "role": entry.role,
        "content": entry.content,
        "tool_calls": tool_calls_json(entry),
        "tool_call_id": entry.tool_call_id,
        "name": entry.name,
        "artifact_refs": artifact_refs_json(entry),
        "reasoning_content": entry.reasoning_content if entry.HasField("reasoning_content") else None,
    }
    blob = parts_blob(entry)
    if blob is not None:  # absent without parts: the hashes of entries stored before parts stay
        canonical["content_parts"] = hashlib.sha256(blob).hexdigest()
    if entry.is_error:  # absent when false: the hashes of entries stored before the mark stay
        canonical["is_error"] = True
    text = json.dumps(canonical, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# The client-set fields of an entry, in the order a conflict names them.
CLIENT_FIELDS = (
    "turn_id",
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "name",
    "artifact_refs",
    "reasoning_content",
    "content_parts",
    "is_error",
)


def differing_fields(stored: history_pb2.ConversationEntry, new: history_pb2.ConversationEntry) -> list[str]:
    """The client-set fields in which `new` differs from the stored entry of the same id."""
    found = []
    for name in CLIENT_FIELDS:
        if name == "reasoning_content":
            same = stored.HasField(name) == new.HasField(name) and getattr(stored, name) == getattr(new, name)
        else:
            same = getattr(stored, name) == getattr(new, name)
        if not same:
            found.append(name)
    return found
