"""A thread as JSON Lines, and back: the export format (docs/export-format.md), version 1.

    lines = export_lines("t-1", copy)          # bytes, one JSON object and b"\\n" each
    copy, exported_id = import_copy(stream)    # INVALID_ARGUMENT naming `line[n]` when it is not one

The first line is the header (its `version` first of all: a reader refuses a version it does
not know, whole), then the turns, the entries in their order, the summaries oldest first, and
a closing line with their counts, so a stream cut short is refused rather than read in part.
Messages are protobuf's JSON mapping (field names as in the .proto; bytes in base64).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from google.protobuf import json_format, timestamp_pb2
from google.protobuf.message import Message

from pioneer_grpc import reasons
from pioneer_grpc.caps import violations_of
from pioneer_grpc.errors import FieldViolation, InvalidArgument
from pioneer_grpc.history.entries import thread_id_violation
from pioneer_grpc.store.copy_port import CopiedEntry, CopiedSummary, CopiedTurn, ThreadCopy
from pioneer_grpc.v1 import history_pb2

FORMAT = "pioneer.thread"
VERSION = 1


def _json(message: Message) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def _time(moment: datetime) -> str:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(moment)
    return stamp.ToJsonString()


def _line(value: dict[str, Any]) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def export_lines(thread_id: str, copy: ThreadCopy) -> Iterator[bytes]:
    yield _line(
        {
            "version": VERSION,
            "type": "header",
            "format": FORMAT,
            "thread_id": thread_id,
            "create_time": _time(copy.created_at),
            "update_time": _time(copy.updated_at),
            "config": _json(copy.config),
            "compaction_failed_entry_id": copy.compaction_failed_entry_id,
        }
    )
    for turn in copy.turns:
        yield _line(
            {
                "type": "turn",
                "turn_id": turn.turn_id,
                "status": history_pb2.TurnStatus.Name(turn.status),
                "create_time": _time(turn.created_at),
                "update_time": _time(turn.updated_at),
            }
        )
    for copied in copy.entries:
        entry = history_pb2.ConversationEntry()
        entry.CopyFrom(copied.entry)
        entry.ClearField("sequence")
        yield _line(
            {
                "type": "entry",
                "entry": _json(entry),
                "content_hash": copied.content_hash,
                "token_counts": dict(sorted(copied.counts.items())),
            }
        )
    for copied_summary in copy.summaries:
        summary = history_pb2.ThreadSummary()
        summary.CopyFrom(copied_summary.summary)
        summary.ClearField("thread_id")
        summary.ClearField("covers_through_sequence")
        yield _line(
            {
                "type": "summary",
                "summary": _json(summary),
                "tokenizer": copied_summary.tokenizer,
                "token_counts": dict(sorted(copied_summary.counts.items())),
            }
        )
    yield _line(
        {
            "type": "end",
            "turns": len(copy.turns),
            "entries": len(copy.entries),
            "summaries": len(copy.summaries),
        }
    )


# ---- reading ----------------------------------------------------------------------------------


class _Bad(Exception):
    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


def _parse_time(value: Any) -> datetime:
    stamp = timestamp_pb2.Timestamp()
    try:
        stamp.FromJsonString(value)
    except (ValueError, TypeError, AttributeError) as exc:
        raise _Bad(f"not an RFC 3339 time: {value!r}") from exc
    return stamp.ToDatetime(tzinfo=UTC)


def _message(value: Any, message: Message) -> Any:
    try:
        json_format.ParseDict(value, message)
    except (json_format.ParseError, TypeError, ValueError) as exc:
        raise _Bad(str(exc)) from exc
    return message


def _counts(value: Any) -> dict[str, int]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(n, int) and 0 <= n < 2**31 for k, n in value.items()
    ):
        raise _Bad("token_counts must map tokenizer names to counts")
    return dict(value)


def _field(line: dict[str, Any], name: str, kind: type) -> Any:
    value = line.get(name)
    if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
        raise _Bad(f"{name} is missing or not a {kind.__name__}")
    return value


class _Reader:
    """The stream's lines, in the order the format has them."""

    def __init__(self) -> None:
        self.header: dict[str, Any] | None = None
        self.turns: list[CopiedTurn] = []
        self.entries: list[CopiedEntry] = []
        self.summaries: list[CopiedSummary] = []
        self.end: dict[str, Any] | None = None
        self.entry_ids: set[str] = set()

    def take(self, line: dict[str, Any]) -> None:
        kind = line.get("type")
        if self.header is None:
            self._header(line)
        elif self.end is not None:
            raise _Bad("a line after the closing line")
        elif kind == "turn":
            self._turn(line)
        elif kind == "entry":
            self._entry(line)
        elif kind == "summary":
            self._summary(line)
        elif kind == "end":
            self.end = line
        else:
            raise _Bad(f"unknown line type {kind!r} (header, turn, entry, summary, end)")

    def _header(self, line: dict[str, Any]) -> None:
        version = line.get("version")
        if version != VERSION:
            raise InvalidArgument.field(
                "line[1].version",
                f"export format version {version!r} is not one this server reads (it reads {VERSION}):"
                " import it into a server that reads it, or export the thread again with this one's",
                reason=reasons.UNSUPPORTED_EXPORT_VERSION,
            )
        if line.get("type") != "header" or line.get("format") != FORMAT:
            raise _Bad(f"the first line must be the header of format {FORMAT!r}")
        self.header = line

    def _turn(self, line: dict[str, Any]) -> None:
        status = _field(line, "status", str)
        if status not in history_pb2.TurnStatus.keys():
            raise _Bad(f"unknown turn status {status!r}")
        self.turns.append(
            CopiedTurn(
                _field(line, "turn_id", str),
                history_pb2.TurnStatus.Value(status),
                _parse_time(line.get("create_time")),
                _parse_time(line.get("update_time")),
            )
        )

    def _entry(self, line: dict[str, Any]) -> None:
        entry = _message(line.get("entry"), history_pb2.ConversationEntry())
        if entry.entry_id in self.entry_ids:
            raise _Bad(f"entry {entry.entry_id!r} is repeated")
        self.entry_ids.add(entry.entry_id)
        self.entries.append(
            CopiedEntry(entry, _field(line, "content_hash", str), _counts(line.get("token_counts", {})))
        )

    def _summary(self, line: dict[str, Any]) -> None:
        summary = _message(line.get("summary"), history_pb2.ThreadSummary())
        if summary.covers_through_entry_id not in self.entry_ids:
            raise _Bad(f"the summary covers through {summary.covers_through_entry_id!r}, no entry before it")
        self.summaries.append(
            CopiedSummary(summary, _field(line, "tokenizer", str), _counts(line.get("token_counts", {})))
        )


def _violations(reader: _Reader) -> list[FieldViolation]:
    found: list[FieldViolation] = []
    header = reader.header or {}
    turn_ids = {t.turn_id for t in reader.turns}
    if len(turn_ids) != len(reader.turns):
        found.append(FieldViolation("turns", "a turn_id is repeated"))
    for i, copied in enumerate(reader.entries):
        found += violations_of(copied.entry, f"entries[{i}]")
        if copied.entry.turn_id not in turn_ids:
            found.append(FieldViolation(f"entries[{i}].turn_id", "names no turn of the export"))
    failed = header.get("compaction_failed_entry_id", "")
    if failed and failed not in reader.entry_ids:
        found.append(FieldViolation("header.compaction_failed_entry_id", "names no entry of the export"))
    return found


def import_copy(stream: bytes, thread_id: str = "") -> tuple[ThreadCopy, str]:
    """The copy a whole export stream holds, and the thread id to store it under (`thread_id`, else
    the export's). INVALID_ARGUMENT naming `line[n]` (1-based) at the first line that is not the
    format's, or naming every field over its cap."""
    reader = _Reader()
    number = 0
    for number, raw in enumerate(stream.splitlines(), start=1):
        try:
            line = json.loads(raw)
            if not isinstance(line, dict):
                raise _Bad("not a JSON object")
            reader.take(line)
        except (ValueError, _Bad) as exc:
            description = exc.description if isinstance(exc, _Bad) else f"not JSON: {exc}"
            raise InvalidArgument.field(f"line[{number}]", description) from None
    if reader.header is None or reader.end is None:
        raise InvalidArgument.field(f"line[{number + 1}]", "the stream ends before its closing line")
    counts = (len(reader.turns), len(reader.entries), len(reader.summaries))
    if (reader.end.get("turns"), reader.end.get("entries"), reader.end.get("summaries")) != counts:
        raise InvalidArgument.field(f"line[{number}]", f"the closing line's counts are not {counts}")
    header = reader.header
    target = thread_id or str(header.get("thread_id", ""))
    try:
        config = _message(header.get("config", {}), history_pb2.ThreadConfig())
        created, updated = _parse_time(header.get("create_time")), _parse_time(header.get("update_time"))
    except _Bad as exc:
        raise InvalidArgument.field("line[1]", exc.description) from None
    InvalidArgument.raise_if(
        [
            thread_id_violation(target, "thread_id" if thread_id else "line[1].thread_id"),
            *_violations(reader),
            *violations_of(config, "header.config"),
        ]
    )
    copy = ThreadCopy(
        config,
        created,
        updated,
        str(header.get("compaction_failed_entry_id", "")),
        reader.turns,
        reader.entries,
        reader.summaries,
    )
    return copy, target
