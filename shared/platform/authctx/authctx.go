// Package authctx names what the authorizer hands every route function
// in the request's authorizer context: the team, the key, and whether the
// team's rate limit was hit. It is a leaf of its own so that the HTTP
// plumbing (shared/platform/httpapi), which every route function links, reads the
// context without linking the authorizer and the teams domain behind it.
package authctx

import (
	"context"
	"regexp"
)

// Keys of the authorizer context (the stage's access log reads them too,
// as $context.authorizer.<key>: infra/stack).
const (
	TeamID = "team_id"
	KeyID  = "key_id"
	// UserID and Role are a bearer token's user and role ("admin" or
	// "member"), or the user a key issued with act_as_users acts for
	// (X-Conclave-User, role "admin"); a key's own request has neither.
	UserID = "user_id"
	Role   = "role"
	// RateLimited is true on a request over the team's rate; RetryAfter
	// is then the seconds until the team's count starts afresh.
	RateLimited = "rate_limited"
	RetryAfter  = "retry_after"
	// UserRateLimit is, on a request over its person's own rate (not
	// the team's), that rate in requests per second.
	UserRateLimit = "user_rate_limit"
	// Unavailable is true when the key could not be checked (the table
	// did not answer in time): the authorizer lets the request through
	// with no team, and the route function answers 503
	// DependencyUnavailable before anything runs, instead of API
	// Gateway's bare 500 for a failed authorizer. The authorizer's results
	// are never cached (infra/stack), so the next request is checked anew.
	Unavailable = "unavailable"
)

// Roles a person has (the Role key). A key's own request has none and may
// do everything, as an admin may.
const (
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// Caller is the person behind a request: the user and role the authorizer
// handed over (UserID and Role), both empty for a key's own request.
type Caller struct {
	UserID string
	Role   string
}

// Member is true for a person with the member role: the one caller whose
// reach the API narrows (its own conversations, the routes a member may
// call). A key, an admin and a key acting for a user are not members.
func (c Caller) Member() bool { return c.Role == RoleMember }

type callerKey struct{}

// WithCaller returns ctx carrying c, for the services below the route
// functions: what a person starts records their user id.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf is the caller ctx carries (empty: a key's own request, or work
// no person started).
func CallerOf(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// MaxUserID bounds a user id.
const MaxUserID = 128

// userIDPattern: the safe characters of a user id (Auth0's "auth0|…",
// Google's digits, Entra's GUIDs, e-mail addresses).
var userIDPattern = regexp.MustCompile(`^[A-Za-z0-9._@:|+-]+$`)

// ValidUserID reports whether id is 1 to MaxUserID safe characters: a
// token's user, X-Conclave-User, an approval policy's deciders.
func ValidUserID(id string) bool {
	return len(id) >= 1 && len(id) <= MaxUserID && userIDPattern.MatchString(id)
}
