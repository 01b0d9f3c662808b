"""One exit status and one stderr line format for every `pioneer-grpc` subcommand.

    0  OK       the command did its work.
    1  FAILURE  the server or runtime failed it: unreachable, an RPC error, cannot start.
    2  USAGE    what it was given is wrong: a bad flag, an input file missing or
                unreadable, malformed JSON, invalid input (field violations).

Every message is `pioneer-grpc <cmd>: <what>` on stderr; field violations one per
line, each once. argparse reports bad flags itself, with status 2 and its own
`<prog>: error: ...` line.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO, TypeVar

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from pioneer_grpc.errors import InvalidArgument

M = TypeVar("M", bound=Message)

OK = 0
FAILURE = 1
USAGE = 2


def say(command: str, what: str, err: TextIO | None = None) -> None:
    """One line on `err` (None: the current sys.stderr)."""
    print(f"pioneer-grpc {command}: {what}", file=err or sys.stderr, flush=True)


def fail(command: str, what: str, status: int, err: TextIO | None = None) -> int:
    say(command, what, err)
    return status


def read_json(source: str, message: M) -> M:
    """The message parsed from the file (`-`: stdin); raises UsageError when unreadable or malformed."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"cannot read {source}: {reason}") from exc
    try:
        return json_format.Parse(text, message)
    except json_format.ParseError as exc:
        kind = message.DESCRIPTOR.name
        raise UsageError(f"{source} is not a {kind} in protobuf JSON: {exc}") from exc


class UsageError(Exception):
    """Something the command was given is wrong; the message says what."""


def violations(
    command: str, found: Iterable[tuple[str, str]], fallback: str, err: TextIO | None = None
) -> int:
    """Prints each field violation once, one per line (else `fallback`); returns USAGE."""
    lines = [f"{field}: {description}" for field, description in found]
    for line in lines or [fallback]:
        say(command, line, err)
    return USAGE


def invalid(command: str, exc: InvalidArgument) -> int:
    return violations(command, ((v.field, v.description) for v in exc.violations), exc.message)


def rpc_failed(command: str, error: grpc.aio.AioRpcError, err: TextIO | None = None) -> int:
    """INVALID_ARGUMENT is the caller's input (USAGE, its violations listed); any other code is FAILURE."""
    if error.code() == grpc.StatusCode.INVALID_ARGUMENT:
        return violations(command, _field_violations(error), f"INVALID_ARGUMENT: {error.details()}", err)
    return fail(command, f"{error.code().name}: {error.details()}", FAILURE, err)


def _field_violations(error: grpc.aio.AioRpcError) -> list[tuple[str, str]]:
    status = rpc_status.from_call(error)
    found: list[tuple[str, str]] = []
    for detail in status.details if status is not None else []:
        bad = error_details_pb2.BadRequest()
        if detail.Unpack(bad):
            found += [(v.field, v.description) for v in bad.field_violations]
    return found
