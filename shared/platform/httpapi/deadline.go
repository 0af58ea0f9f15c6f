package httpapi

import (
	"context"
	"errors"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/awscalls"
)

// AnswerReserve is what a route's handler leaves of the invocation's
// time: its context ends this long before the function's deadline (at
// most a fifth of what is left), so a dependency that stalls (DynamoDB,
// Step Functions, EventBridge not answering) cuts the handler's call off
// and the function still answers, 503 with the request id, before Lambda
// would time it out and API Gateway answer a bare 500. Every AWS call
// takes the handler's context, so the SDK's attempts and retries end
// with it.
const AnswerReserve = time.Second

// handlerContext is ctx ending reserve (at most a fifth of what is left)
// before its deadline. The handler's ends AnswerReserve early; what
// follows it (the idempotency record) a quarter of that, so the function
// still answers if the table does not.
func handlerContext(ctx context.Context, reserve time.Duration) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, dl.Add(-min(reserve, time.Until(dl)/5)))
}

// ReasonDependencyUnavailable is a 503's reason when a dependency did not
// answer and nothing was changed; ReasonOutcomeUnknown when a write had
// been sent, so the request may have taken effect.
const (
	ReasonDependencyUnavailable = "DependencyUnavailable"
	ReasonOutcomeUnknown        = "OutcomeUnknown"
)

func dependencyUnavailable(service, what string) error {
	return apperr.New(apperr.EUNAVAILABLE, "%s: %s did not answer in time; nothing was changed, send the request again", what, service).
		WithReason(ReasonDependencyUnavailable).WithDetail("service", service)
}

// cutOff turns the server fault of a handler whose time ran out (its
// context ended, or one of its AWS calls was cut off by it) into the 503
// it is: DependencyUnavailable naming the service when no write had been
// sent, OutcomeUnknown when the handler had sent one (the request may
// have been applied: sending it again with the same Idempotency-Key
// settles it). The idempotency claim is not the request's change: a claim
// whose release was lost is taken over once the invocation's time is up
// (idempotency.ClaimUntil). Errors with a code of their own (a 404, a 409,
// an EUNAVAILABLE already) stand.
func cutOff(ctx context.Context, err error, writesBefore int) error {
	if e, ok := apperr.As(err); ok && e.Code != apperr.EINTERNAL {
		return err
	}
	calls := awscalls.FromContext(ctx)
	service := ""
	if calls != nil {
		service = calls.Cut()
	}
	timedOut := ctx != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
	if service == "" && !timedOut {
		return err
	}
	if service == "" {
		service = "a dependency"
	}
	if calls != nil && calls.Writes() > writesBefore {
		return apperr.Wrap(apperr.EUNAVAILABLE, err, "%s did not answer in time after the request had started changing things; "+
			"it may or may not have taken effect: send it again with the same Idempotency-Key", service).
			WithReason(ReasonOutcomeUnknown).WithDetail("service", service)
	}
	return dependencyUnavailable(service, "the request was not completed")
}
