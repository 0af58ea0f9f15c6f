// Package authctx names what the authorizer hands every route function
// in the request's authorizer context: the team, the key, and whether the
// team's rate limit was hit. It is a leaf of its own so that the HTTP
// plumbing (shared/platform/httpapi), which every route function links, reads the
// context without linking the authorizer and the teams domain behind it.
package authctx

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
	// Unavailable is true when the key could not be checked (the table
	// did not answer in time): the authorizer lets the request through
	// with no team, and the route function answers 503
	// DependencyUnavailable before anything runs, instead of API
	// Gateway's bare 500 for a failed authorizer. The authorizer's results
	// are never cached (infra/stack), so the next request is checked anew.
	Unavailable = "unavailable"
)
