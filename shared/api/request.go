package api

import (
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
)

// MaxWait bounds GET /v1/tasks/{id}?wait=N below API Gateway's 30 s
// integration timeout (the function's own timeout is 29 s).
const MaxWait = 25

// DecodeOptional decodes a body that may be left out (`null` is refused).
func DecodeOptional(r *httpapi.Request, v any) error { return r.DecodeOptional(v) }

// ByUser is the actor of a request made with an API key.
func ByUser(r *httpapi.Request) string { return "user:" + r.KeyID }
