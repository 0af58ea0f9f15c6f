package api

import (
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
)

// MaxWait bounds GET /v1/tasks/{id}?wait=N below API Gateway's 30 s
// integration timeout (the function's own timeout is 29 s).
const MaxWait = 25

// DecodeOptional decodes a body that may be left out (`null` is refused).
func DecodeOptional(r *httpapi.Request, v any) error { return r.DecodeOptional(v) }

// Actor is who makes a request: its key, or, for a bearer token (no key),
// the token's user, so a person's change never names an empty actor (the
// person a key acts for is recorded apart: owner, user_id).
func Actor(r *httpapi.Request) string {
	if r.KeyID == "" {
		return r.Caller.UserID
	}
	return r.KeyID
}

// ByUser is the actor of a request as changes record it: "user:" and
// Actor.
func ByUser(r *httpapi.Request) string { return "user:" + Actor(r) }
