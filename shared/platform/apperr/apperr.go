// Package apperr defines the one error type the domain returns. Every error a
// client can see carries a stable code; adapters translate infrastructure
// failures into these codes and the HTTP layer maps codes to statuses in one
// place (see httpapi). Errors without a code are internal and reach clients
// only as "Internal error".
package apperr

import (
	"errors"
	"fmt"
)

// Codes. They are part of the public API: clients match on them.
const (
	EINVALID      = "invalid_request"   // the request is malformed or fails validation
	ENOTFOUND     = "not_found"         // the resource does not exist for this team
	ECONFLICT     = "conflict"          // the resource's current state forbids the change
	ELIMIT        = "limit_exceeded"    // a quota or safety limit would be broken; retry later
	EREJECTED     = "rejected"          // a safety rule forbids the request; retrying cannot help
	EUNAUTHORIZED = "unauthorized"      // no or bad credentials
	EFORBIDDEN    = "forbidden"         // the caller's role may not do this (a member, not a key or an admin)
	ETOOLARGE     = "payload_too_large" // the body is over the size limit
	EUPSTREAM     = "upstream_failed"   // every model asked failed, timed out or refused; retry later
	EUNAVAILABLE  = "unavailable"       // too little time was left to finish; nothing was changed, retry
	EINTERNAL     = "internal"          // anything else; details stay in the logs
)

// Error is an application error. Field names the offending request field for
// validation errors; Details carries machine-readable context (for example the
// current status on a conflict).
type Error struct {
	Code    string
	Message string
	Field   string
	Details map[string]any
	// Reason is a finer code within Code (e.g. "DelegationDepthExceeded"
	// within limit_exceeded); empty when Code says it all.
	Reason string
	cause  error
}

// Error implements error.
func (e *Error) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.cause)
	}
	return e.Code + ": " + e.Message
}

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.cause }

// New returns an error with a code and a formatted message.
func New(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid returns an EINVALID error naming the offending field.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Code: EINVALID, Field: field, Message: fmt.Sprintf(format, args...)}
}

// NotFound returns an ENOTFOUND error for a kind of resource.
func NotFound(kind, id string) *Error {
	return &Error{Code: ENOTFOUND, Message: fmt.Sprintf("%s %q not found", kind, id)}
}

// Wrap attaches a cause to a coded error.
func Wrap(code string, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), cause: cause}
}

// WithDetail adds one detail and returns the error for chaining.
func (e *Error) WithDetail(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// WithReason sets the finer-grained reason code.
func (e *Error) WithReason(reason string) *Error {
	e.Reason = reason
	return e
}

// Code returns the code of err, or EINTERNAL for errors without one.
func Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err == nil {
		return ""
	}
	return EINTERNAL
}

// Is reports whether err carries code.
func Is(err error, code string) bool { return err != nil && Code(err) == code }

// As returns the *Error inside err, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
