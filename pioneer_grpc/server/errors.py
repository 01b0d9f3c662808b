"""The one place where domain errors become canonical gRPC statuses."""

from __future__ import annotations

import logging
import math
import traceback

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.protobuf.message import Message
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from pioneer_grpc import errors

log = logging.getLogger(__name__)

CODES: dict[type[errors.PioneerError], int] = {
    errors.InvalidArgument: code_pb2.INVALID_ARGUMENT,
    errors.NotFound: code_pb2.NOT_FOUND,
    errors.AlreadyExists: code_pb2.ALREADY_EXISTS,
    errors.PermissionDenied: code_pb2.PERMISSION_DENIED,
    errors.FailedPrecondition: code_pb2.FAILED_PRECONDITION,
    errors.ResourceExhausted: code_pb2.RESOURCE_EXHAUSTED,
    errors.Aborted: code_pb2.ABORTED,
    errors.Unavailable: code_pb2.UNAVAILABLE,
}


def _packed(message: Message) -> any_pb2.Any:
    detail = any_pb2.Any()
    detail.Pack(message)
    return detail


def to_status(exc: errors.PioneerError) -> grpc.Status:
    return rpc_status.to_status(rpc_status_of(exc))


def rpc_status_of(exc: errors.PioneerError) -> status_pb2.Status:
    """The google.rpc.Status of a domain error: code, message, BadRequest and ErrorInfo details.

    The one mapping both edges use: gRPC sends it as the status, the HTTP edge as a Connect error.
    """
    code = next((c for t, c in CODES.items() if isinstance(exc, t)), code_pb2.INTERNAL)
    status = status_pb2.Status(code=code, message=exc.message)
    if isinstance(exc, errors.InvalidArgument) and exc.violations:
        status.details.append(
            _packed(
                error_details_pb2.BadRequest(
                    field_violations=[
                        error_details_pb2.BadRequest.FieldViolation(field=v.field, description=v.description)
                        for v in exc.violations
                    ]
                )
            )
        )
    info = error_details_pb2.ErrorInfo(reason=exc.reason, domain=errors.ERROR_DOMAIN, metadata=exc.metadata)
    status.details.append(_packed(info))
    if isinstance(exc, errors.QuotaExceeded):
        violation = error_details_pb2.QuotaFailure.Violation(subject=exc.subject, description=exc.description)
        status.details.append(_packed(error_details_pb2.QuotaFailure(violations=[violation])))
    if isinstance(exc, errors.RateLimited):
        delay = duration_pb2.Duration()
        delay.FromNanoseconds(max(1, math.ceil(exc.retry_delay_seconds * 1e9)))
        status.details.append(_packed(error_details_pb2.RetryInfo(retry_delay=delay)))
    return status


def domain_error_of(exc: Exception) -> errors.PioneerError | None:
    """The domain error `exc` is, or None (a bug: INTERNAL). The store names its failures as domain
    errors at its own boundary (store/failures.py), so none reaches here as a driver's class."""
    return exc if isinstance(exc, errors.PioneerError) else None


def internal_status(method: str, exc: BaseException, request_id: str) -> grpc.Status:
    return rpc_status.to_status(internal_rpc_status(method, exc, request_id))


def internal_rpc_status(method: str, exc: BaseException, request_id: str) -> status_pb2.Status:
    """INTERNAL is a bug. Logged with its stack but not its message, which may quote request content."""
    frames = "".join(traceback.format_tb(exc.__traceback__))
    log.error("unexpected %s in %s: %s\n%s", type(exc).__name__, method, errors.describe(exc), frames)
    status = status_pb2.Status(
        code=code_pb2.INTERNAL,
        message=f"internal error in {method}; the server log has the details under request id {request_id}",
    )
    info = error_details_pb2.ErrorInfo(
        reason="INTERNAL", domain=errors.ERROR_DOMAIN, metadata={"request_id": request_id}
    )
    status.details.append(_packed(info))
    return status
