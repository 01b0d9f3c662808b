"""RPC failures as exceptions a caller can branch on: the code, the ErrorInfo reason, the bad fields.

    try:
        client.append_entries(thread_id="t", entries=[...])
    except EntryConflict as exc:         # ALREADY_EXISTS, reason ENTRY_CONFLICT
        print(exc.metadata["differing_fields"])
    except InvalidArgumentError as exc:
        for v in exc.violations: print(v.field, v.description)

Every class derives from RpcFailure; `retryable` says whether sending the same
call again may succeed (UNAVAILABLE, ABORTED but for a stale etag, RESOURCE_EXHAUSTED on a watch).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2

from pioneer_grpc import reasons

STATUS_DETAILS_KEY = "grpc-status-details-bin"


@dataclass(frozen=True)
class FieldViolation:
    field: str
    description: str


@dataclass(eq=False)
class RpcFailure(Exception):
    """A failed call: `code` (grpc.StatusCode), `reason` (ErrorInfo, "" when the server sent none)."""

    code: grpc.StatusCode
    message: str
    reason: str = ""
    domain: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    violations: list[FieldViolation] = field(default_factory=list)
    method: str = ""

    def __str__(self) -> str:
        where = f"{self.method}: " if self.method else ""
        why = f" [{self.reason}]" if self.reason else ""
        return f"{where}{self.code.name}{why}: {self.message}"

    @property
    def retryable(self) -> bool:
        return self.code.name in reasons.RETRYABLE_CODES and self.reason not in reasons.NOT_RETRYABLE_REASONS


class InvalidArgumentError(RpcFailure):
    pass


class NotFoundError(RpcFailure):
    pass


class AlreadyExistsError(RpcFailure):
    pass


class FailedPreconditionError(RpcFailure):
    pass


class PermissionDeniedError(RpcFailure):
    pass


class UnauthenticatedError(RpcFailure):
    pass


class ResourceExhaustedError(RpcFailure):
    pass


class AbortedError(RpcFailure):
    pass


class UnavailableError(RpcFailure):
    pass


class DeadlineExceededError(RpcFailure):
    pass


class UnimplementedError(RpcFailure):
    pass


class InternalError(RpcFailure):
    pass


# Reasons precise enough to deserve their own class (each a subclass of its code's class).
class ThreadNotFound(NotFoundError):
    pass


class TurnNotFound(NotFoundError):
    pass


class ThreadConflict(AlreadyExistsError):
    pass


class EntryConflict(AlreadyExistsError):
    pass


class TurnCompleted(FailedPreconditionError):
    pass


class ThreadExists(AlreadyExistsError):
    """A fork or import named a thread id that is taken."""


class TurnNotCompleted(FailedPreconditionError):
    """A fork named a turn that is still open."""


class UnsupportedExportVersion(InvalidArgumentError):
    """An import stream of a format version the server does not read."""


class WorkspaceOutsideHome(PermissionDeniedError):
    pass


BY_CODE: dict[grpc.StatusCode, type[RpcFailure]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExistsError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.ABORTED: AbortedError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.UNIMPLEMENTED: UnimplementedError,
    grpc.StatusCode.INTERNAL: InternalError,
}
BY_REASON: dict[str, type[RpcFailure]] = {
    reasons.THREAD_NOT_FOUND: ThreadNotFound,
    reasons.TURN_NOT_FOUND: TurnNotFound,
    reasons.THREAD_CONFLICT: ThreadConflict,
    reasons.ENTRY_CONFLICT: EntryConflict,
    reasons.TURN_COMPLETED: TurnCompleted,
    reasons.THREAD_EXISTS: ThreadExists,
    reasons.TURN_NOT_COMPLETED: TurnNotCompleted,
    reasons.UNSUPPORTED_EXPORT_VERSION: UnsupportedExportVersion,
    reasons.WORKSPACE_OUTSIDE_HOME: WorkspaceOutsideHome,
}


def _status_details(error: Any) -> status_pb2.Status | None:
    trailing = error.trailing_metadata() if hasattr(error, "trailing_metadata") else None
    for key, value in trailing or ():
        if key == STATUS_DETAILS_KEY:
            return status_pb2.Status.FromString(value)
    return None


def failure_from(error: grpc.RpcError, method: str = "") -> RpcFailure:
    """The exception for a grpc.RpcError (sync) or grpc.aio.AioRpcError, details decoded."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    message = (error.details() if hasattr(error, "details") else "") or ""
    reason = domain = ""
    metadata: dict[str, str] = {}
    violations: list[FieldViolation] = []
    status = _status_details(error)
    for detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        bad = error_details_pb2.BadRequest()
        if detail.Unpack(info):
            reason, domain, metadata = info.reason, info.domain, dict(info.metadata)
        elif detail.Unpack(bad):
            violations.extend(FieldViolation(v.field, v.description) for v in bad.field_violations)
    cls = BY_REASON.get(reason) or BY_CODE.get(code, RpcFailure)
    if code == grpc.StatusCode.UNAVAILABLE and not status:
        message = message or "the server cannot be reached"
    return cls(code, message, reason, domain, metadata, violations, method)
