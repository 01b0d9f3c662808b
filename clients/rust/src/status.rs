//! `google.rpc` error details carried by a [`tonic::Status`].
//!
//! The server reports bad input as `INVALID_ARGUMENT` with a `google.rpc.BadRequest`
//! detail naming each bad field by its path in the request, e.g.
//! `input.dynamic_sections[0].id`. These helpers decode it with `tonic-types`.
//!
//! ```
//! use pioneer_grpc_client::status::{field_violations, StatusExt};
//! use pioneer_grpc_client::tonic::{Code, Status};
//! use pioneer_grpc_client::tonic_types::{ErrorDetails, FieldViolation};
//!
//! let status = Status::with_error_details(
//!     Code::InvalidArgument,
//!     "bad id",
//!     ErrorDetails::with_bad_request(vec![FieldViolation::new(
//!         "input.dynamic_sections[0].id",
//!         "must not contain whitespace",
//!     )]),
//! );
//! let violations = field_violations(&status);
//! assert_eq!(violations[0].field, "input.dynamic_sections[0].id");
//! assert!(status.get_details_bad_request().is_some());
//! ```

use tonic::{Code, Status};
pub use tonic_types::{BadRequest, ErrorDetails, FieldViolation, StatusExt};

/// The `BadRequest` field violations of `status`, in order; empty when it has none
/// (or its details cannot be decoded).
pub fn field_violations(status: &Status) -> Vec<FieldViolation> {
    status
        .get_details_bad_request()
        .map(|bad_request| bad_request.field_violations)
        .unwrap_or_default()
}

/// The first violation of `field` (an exact path such as `thread_id` or
/// `input.dynamic_sections[0].id`), if `status` names it.
pub fn field_violation(status: &Status, field: &str) -> Option<FieldViolation> {
    field_violations(status)
        .into_iter()
        .find(|violation| violation.field == field)
}

/// The `google.rpc.ErrorInfo` reason of `status` (e.g. `THREAD_NOT_FOUND`,
/// `ENTRY_CONFLICT`, `TURN_COMPLETED`); `None` when it carries no ErrorInfo.
pub fn reason(status: &Status) -> Option<String> {
    status.get_details_error_info().map(|info| info.reason)
}

/// True when `status` says the call's deadline passed: DEADLINE_EXCEEDED from
/// the server, or CANCELLED "Timeout expired", which is how tonic reports its
/// own timer firing before the server answered.
pub fn is_deadline(status: &Status) -> bool {
    match status.code() {
        Code::DeadlineExceeded => true,
        Code::Cancelled => status.message() == tonic::TimeoutExpired(()).to_string(),
        _ => false,
    }
}

/// One line per violation, `field: description`, for logs and error messages.
pub fn describe(status: &Status) -> String {
    let violations = field_violations(status);
    if violations.is_empty() {
        return format!("{:?}: {}", status.code(), status.message());
    }
    let lines: Vec<String> = violations
        .iter()
        .map(|v| format!("{}: {}", v.field, v.description))
        .collect();
    format!("{:?}: {}", status.code(), lines.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_violations_and_describes_them() {
        let status = Status::with_error_details(
            Code::InvalidArgument,
            "bad",
            ErrorDetails::with_bad_request(vec![
                FieldViolation::new("a", "first"),
                FieldViolation::new("b[1].c", "second"),
            ]),
        );
        assert_eq!(field_violations(&status).len(), 2);
        assert_eq!(
            field_violation(&status, "b[1].c").unwrap().description,
            "second"
        );
        assert!(field_violation(&status, "b").is_none());
        assert_eq!(
            describe(&status),
            "InvalidArgument: a: first; b[1].c: second"
        );
        assert!(field_violations(&Status::not_found("x")).is_empty());
        assert_eq!(describe(&Status::not_found("x")), "NotFound: x");
    }

    #[test]
    fn deadline_codes() {
        assert!(is_deadline(&Status::deadline_exceeded("Deadline Exceeded")));
        assert!(is_deadline(&Status::cancelled("Timeout expired")));
        assert!(!is_deadline(&Status::cancelled("client went away")));
        assert!(!is_deadline(&Status::unavailable("down")));
    }
}
