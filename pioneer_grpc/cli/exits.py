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

import difflib
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO, TypeVar

import grpc
from google.protobuf import descriptor_pool, json_format
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
        raise UsageError(f"{source} is not a {kind} in protobuf JSON: {parse_error_line(exc)}") from exc


_UNKNOWN_FIELD = re.compile(
    r'Message type "(?P<type>[\w.]+)" has no field named "(?P<field>[^"]+)" at "(?P<at>[^"]*)"'
    r'(?:.*Available Fields\(except extensions\): "\[(?P<fields>[^\]]*)\]")?',
    re.DOTALL,
)
_BAD_ENUM = re.compile(
    r"Invalid enum value (?P<value>.+?) for enum type (?P<enum>[\w.]+) at (?P<at>\S+?)\.*$"
)


def parse_error_line(exc: json_format.ParseError) -> str:
    """protobuf's JSON parse error as one line: the unknown field or enum value, where, and what fits.

    Read from protobuf's own wording; a message of another shape gives its first line.
    """
    text = str(exc)
    unknown = _UNKNOWN_FIELD.search(text)
    if unknown:
        name = unknown["type"].rsplit(".", 1)[-1]
        fields = [f.strip().strip("'") for f in (unknown["fields"] or "").split(",") if f.strip()]
        close = difflib.get_close_matches(unknown["field"], fields, n=1)
        hint = f'; did you mean "{close[0]}"?' if close else ""
        listed = f" (its fields: {', '.join(fields)})" if fields and not close else ""
        return f'unknown field "{unknown["field"]}" in {name} at {unknown["at"]}{hint}{listed}'
    bad = _BAD_ENUM.search(text)
    if bad:
        names = _enum_names(bad["enum"])
        # "user" for CHAT_ROLE_USER: the enum's own prefix left out.
        close = [n for n in names if n.endswith("_" + bad["value"].upper())]
        hint = f'; did you mean "{close[0]}"?' if len(close) == 1 else ""
        short = bad["enum"].rsplit(".", 1)[-1]
        accepted = f" (one of {', '.join(names)})" if names else ""
        return f'"{bad["value"]}" is not a {short} at {bad["at"]}{hint}{accepted}'
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return re.sub(r"^(Failed to parse \w+ field: )+", "", first)


def _enum_names(full_name: str) -> list[str]:
    try:
        enum = descriptor_pool.Default().FindEnumTypeByName(full_name)
    except KeyError:
        return []
    return [value.name for value in enum.values]


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


def rpc_failed(
    command: str, error: grpc.aio.AioRpcError, err: TextIO | None = None, address: str = ""
) -> int:
    """INVALID_ARGUMENT is the caller's input (USAGE, its violations listed); any other code is FAILURE."""
    if error.code() == grpc.StatusCode.INVALID_ARGUMENT:
        return violations(command, _field_violations(error), f"INVALID_ARGUMENT: {error.details()}", err)
    if address and unreachable(error):
        return fail(command, no_server(address), FAILURE, err)
    return fail(command, f"{error.code().name}: {error.details()}", FAILURE, err)


def unreachable(error: grpc.aio.AioRpcError) -> bool:
    """UNAVAILABLE from the channel itself (no server answered), not from a server (which sends a reason)."""
    return error.code() == grpc.StatusCode.UNAVAILABLE and rpc_status.from_call(error) is None


def no_server(address: str) -> str:
    return f"no answer from {address}: is the server running at {address}? (`make run` starts one)"


def _field_violations(error: grpc.aio.AioRpcError) -> list[tuple[str, str]]:
    status = rpc_status.from_call(error)
    found: list[tuple[str, str]] = []
    for detail in status.details if status is not None else []:
        bad = error_details_pb2.BadRequest()
        if detail.Unpack(bad):
            found += [(v.field, v.description) for v in bad.field_violations]
    return found
