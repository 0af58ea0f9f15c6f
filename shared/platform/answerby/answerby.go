// Package answerby carries, in a context, the time by which the function
// serving a request must have answered (shared/platform/httpapi sets it: the
// invocation's deadline less the answer reserve). Work that deliberately
// outlives its caller's context — settling a model call's reservation,
// writing a consultation's outcome after the tool's deadline — is
// detached from the caller's cancellation but still ends by then, so it
// never makes the function time out (API Gateway's bare 500).
//
// It is a leaf: domain packages import it without linking anything.
package answerby

import (
	"context"
	"time"
)

type key struct{}

// With returns ctx carrying t as the time to answer by.
func With(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, key{}, t)
}

// Of returns the time to answer by, if ctx carries one.
func Of(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(key{}).(time.Time)
	return t, ok
}

// Detached returns a context that is not canceled with ctx and ends after
// d, or at the time to answer by if ctx carries an earlier one.
func Detached(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	end := time.Now().Add(d)
	if t, ok := Of(ctx); ok && t.Before(end) {
		end = t
	}
	return context.WithDeadline(context.WithoutCancel(ctx), end)
}
