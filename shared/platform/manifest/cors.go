package manifest

// What both APIs tell a browser, in AWS (infra/stack, cors.go) and on the
// local edge (localstack/cloud, cors.go) alike.
var (
	// CORSHeaders are the request headers the APIs read: the ones a
	// preflight may ask to send.
	// traceparent: a browser client's trace, linked to the request's.
	CORSHeaders = []string{"Content-Type", "Authorization", "X-Api-Key", "Idempotency-Key", "X-Conclave-User", "Last-Event-ID", "traceparent"}
	// CORSExposeHeaders are the response headers a browser client reads
	// (X-Trace-Id and traceresponse: the request's trace).
	CORSExposeHeaders = []string{"Retry-After", "X-Request-Id", "X-Trace-Id", "traceresponse"}
	// CORSMethods are the methods of the APIs' routes.
	CORSMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}
)

// CORSMaxAgeSeconds is how long a browser may keep a preflight's answer
// (Chromium keeps one two hours at most).
const CORSMaxAgeSeconds = 7200
