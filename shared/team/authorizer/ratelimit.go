package authorizer

import (
	"context"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"time"
)

// RequestCounter counts a team's requests in one second, atomically across
// every concurrent authorizer: the count after this request.
type RequestCounter interface {
	CountRequest(ctx context.Context, teamID string, second int64) (int, error)
}

// RateLimit is the per-team request rate: at most PerSecond requests of one
// team (all its keys together) in a clock second. API Gateway's stage
// throttle protects the service as a whole; this keeps one team from using
// it all. The authorizer cannot answer 429 (a simple response is allow or
// deny, and a denial is a 403), so it authorizes the request and marks it
// rate_limited; the route function answers 429 with Retry-After before
// doing anything (shared/platform/httpapi).
type RateLimit struct {
	PerSecond int
	Counter   RequestCounter
	Now       func() time.Time
}

// Context keys of a limited request in the authorizer context: true, and
// the seconds until the team's count starts afresh.
const (
	ContextRateLimited = authctx.RateLimited
	ContextRetryAfter  = authctx.RetryAfter
)

// limited counts the request and reports whether it is over the limit. A
// counter that fails lets the request through (logged): an outage of the
// limiter must not take the API down with it.
func (h *Handler) limited(ctx context.Context, teamID string) bool {
	r := h.Rate
	if r == nil || r.PerSecond <= 0 || r.Counter == nil {
		return false
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	n, err := r.Counter.CountRequest(ctx, teamID, now().Unix())
	if err != nil {
		h.Log.ErrorContext(ctx, "rate counter failed; request let through", "error", err.Error())
		return false
	}
	return n > r.PerSecond
}
