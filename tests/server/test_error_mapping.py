"""Domain errors become canonical statuses with details, in one place."""

from __future__ import annotations

from google.rpc import code_pb2, error_details_pb2

from pioneer_grpc import errors
from pioneer_grpc.server.errors import to_status


def test_invalid_argument_carries_bad_request_field_violations():
    exc = errors.InvalidArgument(
        "2 bad fields",
        [
            errors.FieldViolation("input.profile", "unknown profile 9"),
            errors.FieldViolation("input.limits.max_chars_total", "must not be negative"),
        ],
    )
    status = to_status(exc)
    assert status.code.value[0] == code_pb2.INVALID_ARGUMENT
    assert status.details == "2 bad fields"
    trailer = dict(status.trailing_metadata)["grpc-status-details-bin"]
    from google.rpc import status_pb2

    detail = status_pb2.Status.FromString(trailer).details[0]
    bad = error_details_pb2.BadRequest()
    assert detail.Unpack(bad)
    assert [(v.field, v.description) for v in bad.field_violations] == [
        ("input.profile", "unknown profile 9"),
        ("input.limits.max_chars_total", "must not be negative"),
    ]


def test_each_domain_error_maps_to_its_code():
    cases = {
        errors.NotFound("x"): code_pb2.NOT_FOUND,
        errors.AlreadyExists("x"): code_pb2.ALREADY_EXISTS,
        errors.PermissionDenied("x"): code_pb2.PERMISSION_DENIED,
        errors.FailedPrecondition("x"): code_pb2.FAILED_PRECONDITION,
        errors.ResourceExhausted("x"): code_pb2.RESOURCE_EXHAUSTED,
        errors.Unavailable("x"): code_pb2.UNAVAILABLE,
    }
    for exc, code in cases.items():
        assert to_status(exc).code.value[0] == code, type(exc).__name__
