"""Domain errors raised by the cores and use cases; the server maps each to a canonical gRPC status.

Nothing here imports grpc: `compiler/`, `history/`, `providers/` and `service/`
raise these and stay transport-free. `server/errors.py` turns them into a
`google.rpc.Status` carrying an `ErrorInfo` (the stable `reason`, domain
ERROR_DOMAIN) and, for InvalidArgument, `BadRequest` with every field violation.

Invalid input is built one way, from the list of every violation found:

    InvalidArgument.raise_if([thread_id_violation(thread_id), *entry_violations(entries)])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar

ERROR_DOMAIN = "pioneer.v1"
# How many violations a message lists before "(and N more)".
LISTED_VIOLATIONS = 3
# How many a BadRequest carries, and in how many characters: the error travels base64-encoded
# in a trailer, which clients refuse past 16 KiB by default, and a request can hold thousands
# of bad fields. The message still counts them all.
CARRIED_VIOLATIONS = 50
CARRIED_CHARS = 4_000


@dataclass(frozen=True)
class FieldViolation:
    """One bad field: `field` is a path of the request, such as `input.dynamic_sections[2].id`."""

    field: str
    description: str


class PioneerError(Exception):
    """Base of every domain error; `message` is what a person reads, `reason` what a program tests."""

    default_reason: ClassVar[str] = "INTERNAL"

    def __init__(self, message: str, *, reason: str = "", metadata: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason or self.default_reason
        self.metadata = dict(metadata or {})


def violations_message(violations: list[FieldViolation], context: str = "") -> str:
    """`field: description; ...` for the first few, then `(and N more)`, after an optional context."""
    listed = "; ".join(f"{v.field}: {v.description}" for v in violations[:LISTED_VIOLATIONS])
    hidden = len(violations) - LISTED_VIOLATIONS
    message = listed + (f" (and {hidden} more)" if hidden > 0 else "")
    return f"{context}: {message}" if context else message


def _carried(violations: list[FieldViolation]) -> list[FieldViolation]:
    """The first violations that fit CARRIED_VIOLATIONS and CARRIED_CHARS (always at least one)."""
    carried: list[FieldViolation] = []
    chars = 0
    for violation in violations[:CARRIED_VIOLATIONS]:
        chars += len(violation.field) + len(violation.description)
        if carried and chars > CARRIED_CHARS:
            break
        carried.append(violation)
    return carried


class InvalidArgument(PioneerError):
    """The request is malformed; `violations` name each bad field."""

    default_reason = "INVALID_ARGUMENT"

    def __init__(
        self, message: str, violations: list[FieldViolation] | None = None, *, reason: str = ""
    ) -> None:
        super().__init__(message, reason=reason)
        self.violations = list(violations or [])

    @classmethod
    def of(cls, violations: list[FieldViolation], context: str = "", *, reason: str = "") -> InvalidArgument:
        """The message counts every violation; the first few travel as field violations."""
        return cls(violations_message(violations, context), _carried(violations), reason=reason)

    @classmethod
    def field(cls, field: str, description: str, *, reason: str = "") -> InvalidArgument:
        return cls.of([FieldViolation(field, description)], reason=reason)

    @classmethod
    def raise_if(
        cls, violations: Iterable[FieldViolation | None], context: str = "", *, reason: str = ""
    ) -> None:
        """Raises with every violation found (None entries are checks that passed)."""
        found = [v for v in violations if v is not None]
        if found:
            raise cls.of(found, context, reason=reason)


class NotFound(PioneerError):
    """A named resource (thread, turn, event) does not exist."""

    default_reason = "NOT_FOUND"


class AlreadyExists(PioneerError):
    """A resource with this id exists with different content."""

    default_reason = "ALREADY_EXISTS"


class PermissionDenied(PioneerError):
    """The caller may not touch this resource, e.g. a path outside the runtime home."""

    default_reason = "PERMISSION_DENIED"


class FailedPrecondition(PioneerError):
    """The system is not in a state that allows the operation."""

    default_reason = "FAILED_PRECONDITION"


class ResourceExhausted(PioneerError):
    """A limit was reached, e.g. an observer fell too far behind, or the disk is full."""

    default_reason = "RESOURCE_EXHAUSTED"


class RateLimited(ResourceExhausted):
    """A caller's request rate is used up; a call is taken again after `retry_delay_seconds`."""

    def __init__(
        self,
        message: str,
        *,
        retry_delay_seconds: float,
        reason: str = "",
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message, reason=reason, metadata=metadata)
        self.retry_delay_seconds = retry_delay_seconds


class QuotaExceeded(ResourceExhausted):
    """A tenant's cap (tenants file) would be passed: what (`subject`) and by how much (`description`),
    for a QuotaFailure."""

    def __init__(
        self,
        message: str,
        *,
        subject: str,
        description: str,
        reason: str = "",
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message, reason=reason, metadata=metadata)
        self.subject = subject
        self.description = description


class Aborted(PioneerError):
    """A concurrency conflict, e.g. a lock wait ran out; retrying the whole call is safe."""

    default_reason = "ABORTED"


class Unavailable(PioneerError):
    """A dependency (database, summary model) cannot be reached right now; retrying is safe."""

    default_reason = "UNAVAILABLE"


def describe(error: BaseException) -> str:
    """A log-safe line for an error: its class and, for a database failure, the driver's class, code
    and SQL; never its message or parameters, which may quote conversation content."""
    parts = [type(error).__name__]
    orig = getattr(error, "orig", None)
    if orig is not None:
        parts.append(type(orig).__name__)
        code = getattr(orig, "sqlstate", None) or getattr(orig, "sqlite_errorname", None)
        if code:
            parts.append(str(code))
    statement = getattr(error, "statement", None)
    if statement:
        parts.append("in: " + " ".join(str(statement).split())[:200])
    return " ".join(parts)
