package pioneer

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Code returns the canonical gRPC code of err (OK for nil, Unknown for a
// non-gRPC error). Wrapped gRPC errors are unwrapped.
func Code(err error) codes.Code {
	return status.Code(err)
}

// BadRequest returns the google.rpc.BadRequest detail carried by err, if any.
// Several BadRequest details are merged into one.
func BadRequest(err error) (*errdetails.BadRequest, bool) {
	if err == nil {
		return nil, false
	}
	st, ok := status.FromError(err)
	if !ok {
		return nil, false
	}
	var merged *errdetails.BadRequest
	for _, d := range st.Details() {
		br, ok := d.(*errdetails.BadRequest)
		if !ok {
			continue
		}
		if merged == nil {
			merged = &errdetails.BadRequest{}
		}
		merged.FieldViolations = append(merged.FieldViolations, br.GetFieldViolations()...)
	}
	return merged, merged != nil
}

// FieldViolations returns the field violations of err's BadRequest detail, in
// the order the server sent them; nil when there are none.
func FieldViolations(err error) []*errdetails.BadRequest_FieldViolation {
	br, ok := BadRequest(err)
	if !ok {
		return nil
	}
	return br.GetFieldViolations()
}

// FieldViolation returns the violation on field (e.g.
// "input.dynamic_sections[0].id"), if err carries one.
func FieldViolation(err error, field string) (*errdetails.BadRequest_FieldViolation, bool) {
	for _, v := range FieldViolations(err) {
		if v.GetField() == field {
			return v, true
		}
	}
	return nil, false
}

// ErrorInfo returns the google.rpc.ErrorInfo detail carried by err, if any.
func ErrorInfo(err error) (*errdetails.ErrorInfo, bool) {
	st, ok := status.FromError(err)
	if !ok || err == nil {
		return nil, false
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info, true
		}
	}
	return nil, false
}
