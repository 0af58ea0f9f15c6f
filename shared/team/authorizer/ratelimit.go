package authorizer

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/authctx"
)

// RequestCounter counts requests in one second, atomically across every
// concurrent authorizer: the count after this request. CountRequest
// counts a team's (all its keys and people together), CountUserRequest
// one person's of a team.
type RequestCounter interface {
	CountRequest(ctx context.Context, teamID string, second int64) (int, error)
	CountUserRequest(ctx context.Context, teamID, userID string, second int64) (int, error)
}

// RateLimit is the per-team request rate: at most PerSecond requests of one
// team (all its keys together) in a clock second, and at most PerUser of
// one person of it (a bearer token's user, or the user a key acts for), so
// one person cannot use the whole team's rate. API Gateway's stage
// throttle protects the service as a whole; this keeps one team from using
// it all. The authorizer cannot answer 429 (a simple response is allow or
// deny, and a denial is a 403), so it authorizes the request and marks it
// rate_limited; the route function answers 429 with Retry-After before
// doing anything (shared/platform/httpapi).
type RateLimit struct {
	PerSecond int
	// PerUser is a person's rate; 0 is DefaultPerUser(PerSecond).
	PerUser int
	Counter RequestCounter
	Now     func() time.Time
}

// NewRateLimit is the rate limit of a stage's configuration (the
// TEAM_RATE_LIMIT and USER_RATE_LIMIT settings) over counter, or nil when
// the stage limits no team: a person's requests are counted only within
// a team's limit, so without one there is nothing to count. Every
// function that checks keys builds it here, so each enforces the same
// rates.
func NewRateLimit(perTeam, perUser int, counter RequestCounter) *RateLimit {
	if perTeam <= 0 {
		return nil
	}
	return &RateLimit{PerSecond: perTeam, PerUser: perUser, Counter: counter}
}

// DefaultPerUser is a person's rate when none is set: a fifth of the
// team's, rounded down, at least 1.
func DefaultPerUser(perTeam int) int { return max(1, perTeam/5) }

// UserPerSecond is the rate of one person of the team.
func (r *RateLimit) UserPerSecond() int {
	if r.PerUser > 0 {
		return r.PerUser
	}
	return DefaultPerUser(r.PerSecond)
}

// Context keys of a limited request in the authorizer context: true, and
// the seconds until the count starts afresh; for a person over their own
// rate, ContextUserRateLimit is that rate too.
const (
	ContextRateLimited   = authctx.RateLimited
	ContextRetryAfter    = authctx.RetryAfter
	ContextUserRateLimit = authctx.UserRateLimit
)

// limit counts the request, the team's and then (when the team is under
// its rate and a person makes it) the person's, and marks authz when
// either is over. A person's request over the team's rate is not counted
// against the person: it never ran.
func (h *Handler) limit(ctx, actx context.Context, teamID, userID string, authz map[string]any) {
	r := h.Rate
	if r == nil || r.PerSecond <= 0 || r.Counter == nil {
		return
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	second := now().Unix()
	if h.over(ctx, r.PerSecond, func() (int, error) { return r.Counter.CountRequest(actx, teamID, second) }) {
		h.Log.WarnContext(ctx, "team over its rate limit")
		authz[ContextRateLimited], authz[ContextRetryAfter] = true, 1
		return
	}
	if userID == "" {
		return
	}
	perUser := r.UserPerSecond()
	if h.over(ctx, perUser, func() (int, error) { return r.Counter.CountUserRequest(actx, teamID, userID, second) }) {
		h.Log.WarnContext(ctx, "user over their rate limit", "limit_per_second", perUser)
		authz[ContextRateLimited], authz[ContextRetryAfter], authz[ContextUserRateLimit] = true, 1, perUser
	}
}

// over counts and reports whether the count passed limit. A counter that
// fails lets the request through (logged): an outage of the limiter must
// not take the API down with it.
func (h *Handler) over(ctx context.Context, limit int, count func() (int, error)) bool {
	n, err := count()
	if err != nil {
		h.Log.ErrorContext(ctx, "rate counter failed; request let through", "error", err.Error())
		return false
	}
	return n > limit
}
