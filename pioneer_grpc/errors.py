"""Domain errors raised by the cores; the server maps each to a canonical gRPC status.

Nothing here imports grpc: `compiler/`, `history/` and `providers/` raise these
and stay transport-free. `server/errors.py` turns them into `google.rpc.Status`
with details (BadRequest field violations for InvalidArgument).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldViolation:
    """One bad field: `field` is a path such as `input.dynamic_sections[2].id`."""

    field: str
    description: str


class PioneerError(Exception):
    """Base of every domain error; `message` is what a person reads."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(PioneerError):
    """The request is malformed; `violations` name each bad field."""

    def __init__(self, message: str, violations: list[FieldViolation] | None = None) -> None:
        super().__init__(message)
        self.violations = list(violations or [])

    @classmethod
    def field(cls, field: str, description: str) -> InvalidArgument:
        return cls(f"{field}: {description}", [FieldViolation(field, description)])


class NotFound(PioneerError):
    """A named resource (thread, turn, event) does not exist."""


class AlreadyExists(PioneerError):
    """A resource with this id exists with different content."""


class PermissionDenied(PioneerError):
    """The caller may not touch this resource, e.g. a path outside the runtime home."""


class FailedPrecondition(PioneerError):
    """The system is not in a state that allows the operation."""


class ResourceExhausted(PioneerError):
    """A limit was reached, e.g. an observer fell too far behind."""


class Unavailable(PioneerError):
    """A dependency (database, summary model) cannot be reached right now."""
