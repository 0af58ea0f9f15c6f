// Package httpapi is the plumbing every API function shares: it turns an API
// Gateway HTTP API (payload 2.0) event into a Request, routes it by route key,
// decodes bodies strictly, replays idempotent POSTs, writes the one JSON error
// shape, and logs one structured line per request.
package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclave-ai/conclave/shared/platform/answerby"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/awscalls"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/tracing"
)

// MaxBodyBytes bounds request bodies; larger bodies are 413 before decoding.
const MaxBodyBytes = 64 << 10

// Request is what a route handler sees.
type Request struct {
	Event     *events.APIGatewayV2HTTPRequest
	TeamID    string
	KeyID     string
	RequestID string
	// Caller is the person behind the request (a bearer token's user, or
	// the user a key acts for), empty for a key's own request; the
	// handler's context carries it too (authctx.CallerOf).
	Caller authctx.Caller
	// Log carries the request's log attributes (request, team, route)
	// without a context (logctx.Bind).
	Log *slog.Logger
	// ctx is the request's context (Serve sets it), as a net/http Request
	// carries one, for the error path that has only the request: its line
	// is logged with the context like every other. It is the handler's
	// (ending AnswerReserve early); tail is the invocation's, for what
	// follows the handler (the idempotency record).
	ctx, tail context.Context
	// deadline is the invocation's (hasDeadline false: none), after which
	// the request cannot be running: its idempotency claim lapses then
	// (idempotency.ClaimUntil).
	deadline    time.Time
	hasDeadline bool
	// writesBefore is the invocation's writes before the handler ran (the
	// idempotency claim's): only the handler's make an outcome unknown.
	writesBefore int
	// stream is a streamed response's body (stream.go), kept here by run
	// for ServeStream.
	stream Body
}

// authorized reads the authorizer's context lc into the request (team,
// key, caller) and returns ctx carrying the caller.
func (r *Request) authorized(ctx context.Context, lc map[string]any) context.Context {
	r.TeamID, _ = lc[authctx.TeamID].(string)
	r.KeyID, _ = lc[authctx.KeyID].(string)
	r.Caller.UserID, _ = lc[authctx.UserID].(string)
	r.Caller.Role, _ = lc[authctx.Role].(string)
	return authctx.WithCaller(ctx, r.Caller)
}

// tailContext is the invocation's context (the handler's in tests that
// build a Request by hand).
func (r *Request) tailContext() context.Context {
	if r.tail != nil {
		return r.tail
	}
	if r.ctx != nil {
		return r.ctx
	}
	return context.Background()
}

// Param returns a path parameter.
func (r *Request) Param(name string) string { return r.Event.PathParameters[name] }

// Query returns a query string parameter.
func (r *Request) Query(name string) string { return r.Event.QueryStringParameters[name] }

// Page reads limit and next_token from the query string.
func (r *Request) Page() (paging.Page, error) {
	p := paging.Page{Token: r.Query("next_token")}
	if l := r.Query("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			return p, apperr.Invalid("limit", "limit must be an integer")
		}
		if n < 1 || n > paging.MaxLimit {
			return p, apperr.Invalid("limit", "limit must be from 1 to %d", paging.MaxLimit)
		}
		p.Limit = n
	} else if r.HasQuery("limit") {
		return p, apperr.Invalid("limit", "limit must be an integer")
	}
	return p.Normalize()
}

// HasQuery reports whether the query string has the parameter, even empty
// (`?since=`): a parameter given empty is refused where the document asks
// for a value, not taken as absent.
func (r *Request) HasQuery(name string) bool {
	_, ok := r.Event.QueryStringParameters[name]
	return ok
}

// Decode reads the JSON body into v (a pointer to a struct). The body must
// be one JSON object: `null`, an array or a scalar at the top, unknown
// fields, trailing data, `null` or a wrong type for a field are EINVALID
// errors naming the field (by its JSON path) and the JSON type expected.
func (r *Request) Decode(v any) error {
	body := r.Event.Body
	if r.Event.IsBase64Encoded {
		return apperr.Invalid("body", "body must be JSON text")
	}
	if strings.TrimSpace(body) == "" {
		return apperr.Invalid("body", "a JSON body is required")
	}
	return decodeStrict(body, v)
}

// DecodeOptional is Decode for a route whose body may be left out: an
// empty body leaves v as it is; anything else (`null` included) must be a
// valid body.
func (r *Request) DecodeOptional(v any) error {
	if !r.Event.IsBase64Encoded && strings.TrimSpace(r.Event.Body) == "" {
		return nil
	}
	return r.Decode(v)
}

// MaxPathIDLength bounds a path parameter (slug or id).
const MaxPathIDLength = 128

// ValidPathID reports whether v can be a slug or id: 1 to MaxPathIDLength
// ASCII letters, digits, '_', '-', '.' or ':' (what ids.New, slugs and the
// demo's ids are made of; the OpenAPI document's parameters say the same).
// Anything else — '%', '/', a NUL, non-ASCII — names nothing.
func ValidPathID(v string) bool {
	if v == "" || len(v) > MaxPathIDLength {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// Response is a handler's result.
type Response struct {
	Status int
	Body   any
}

// OK, Created and NoContent build common responses.
func OK(v any) Response      { return Response{Status: http.StatusOK, Body: v} }
func Created(v any) Response { return Response{Status: http.StatusCreated, Body: v} }
func NoContent() Response    { return Response{Status: http.StatusNoContent} }

// HandlerFunc handles one route. A returned error is rendered with the error
// shape; it never fails the Lambda invocation.
type HandlerFunc func(ctx context.Context, r *Request) (Response, error)

// Router dispatches by API Gateway route key.
type Router struct {
	routes map[string]HandlerFunc
	// replay, when set (WithIdempotency), runs a POST with an
	// Idempotency-Key at most once and replays its response.
	replay func(ctx context.Context, req *Request, h HandlerFunc, key string) events.APIGatewayV2HTTPResponse
	// Bodies, when set, says which routes take a body (the OpenAPI
	// document's requestBody; see api.BodyRoutes): a route it does not
	// list refuses a non-empty body with 400 before its handler runs, so
	// a body sent to pause, close or rotate is an error, not ignored.
	Bodies map[string]bool
	// Disabled are the routes whose feature flag is off, with the flag:
	// they answer 409 FeatureDisabled before anything runs (Disable).
	Disabled map[string]string
	// Members are the routes a member may call (NewRouter:
	// manifest.MemberRoutes); any other answers a member 403
	// RoleForbidden before anything runs. Keys and admins call every route.
	Members map[string]bool
	Log     *slog.Logger
	Now     func() time.Time
	// streaming: the router of the streaming API (NewStreamRouter).
	streaming bool
}

// Disable makes routeKey answer 409 FeatureDisabled naming flag.
func (rt *Router) Disable(routeKey, flag string) {
	if rt.Disabled == nil {
		rt.Disabled = map[string]string{}
	}
	rt.Disabled[routeKey] = flag
}

// NewRouter returns an empty router that keeps no idempotency records.
func NewRouter(log *slog.Logger) *Router {
	return &Router{routes: map[string]HandlerFunc{}, Members: manifest.MemberRoutes, Log: log, Now: time.Now}
}

// WithIdempotency makes POSTs with an Idempotency-Key replayable, with
// their records in store, and returns rt.
//
// It is a step of its own, not an argument of NewRouter, so that a
// function serving only reads links no idempotency write: the code of a
// function is what its IAM grants are held to (infra/grants), and
// whatever the router's constructor references every function links.
func (rt *Router) WithIdempotency(store idempotency.Store) *Router {
	rt.replay = func(ctx context.Context, req *Request, h HandlerFunc, key string) events.APIGatewayV2HTTPResponse {
		return rt.idempotent(ctx, store, req, h, key)
	}
	return rt
}

// Replays reports whether rt replays POSTs with an Idempotency-Key.
func (rt *Router) Replays() bool { return rt.replay != nil }

// Handle registers h for a route key such as "GET /v1/agents/{slug}".
func (rt *Router) Handle(routeKey string, h HandlerFunc) { rt.routes[routeKey] = h }

// RouteKeys lists the registered route keys.
func (rt *Router) RouteKeys() []string {
	out := make([]string, 0, len(rt.routes))
	for k := range rt.routes {
		out = append(out, k)
	}
	return out
}

// ErrorBody is the one JSON error shape.
type ErrorBody struct {
	Error     ErrorDetail `json:"error"`
	RequestID string      `json:"request_id"`
}

// ErrorDetail describes an error for clients.
type ErrorDetail struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Field   string         `json:"field,omitempty"`
	Reason  string         `json:"reason,omitempty"`
	Details map[string]any `json:"details,omitempty"`
}

// Status maps an error code to its HTTP status.
func Status(code string) int {
	switch code {
	case apperr.EINVALID:
		return http.StatusBadRequest
	case apperr.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case apperr.EFORBIDDEN:
		return http.StatusForbidden
	case apperr.ENOTFOUND:
		return http.StatusNotFound
	case apperr.ECONFLICT:
		return http.StatusConflict
	case apperr.ELIMIT:
		return http.StatusTooManyRequests
	case apperr.EREJECTED:
		return http.StatusUnprocessableEntity
	case apperr.ETOOLARGE:
		return http.StatusRequestEntityTooLarge
	case apperr.EUPSTREAM:
		return http.StatusBadGateway
	case apperr.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Serve is the Lambda handler for an HTTP API function.
func (rt *Router) Serve(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	start := rt.Now()
	req := &Request{Event: &ev, RequestID: ev.RequestContext.RequestID}
	if lc := ev.RequestContext.Authorizer; lc != nil {
		ctx = req.authorized(ctx, lc.Lambda)
	}
	// Every line logged with this context, in the services too, says which
	// request (the id API Gateway's access log has), team and route.
	ctx = logctx.With(ctx, "request_id", req.RequestID, "team_id", req.TeamID, "route", ev.RouteKey)
	// The handler's time ends AnswerReserve before the invocation's, so a
	// stalled dependency ends in this function's own answer (503, below),
	// never in a Lambda timeout and API Gateway's bare 500.
	req.deadline, req.hasDeadline = ctx.Deadline()
	hctx, cancel := handlerContext(ctx, AnswerReserve)
	defer cancel()
	if dl, ok := hctx.Deadline(); ok {
		// Work detached from the handler's cancel still ends by then.
		hctx = answerby.With(hctx, dl)
	}
	tctx, tcancel := handlerContext(ctx, AnswerReserve/4)
	defer tcancel()
	req.Log, req.ctx, req.tail = logctx.Bind(rt.Log, ctx), hctx, tctx
	resp := rt.dispatch(hctx, req)
	Traced(ctx, &resp)
	attrs := []any{"status", resp.StatusCode, "latency_ms", rt.Now().Sub(start).Milliseconds()}
	if calls := awscalls.FromContext(ctx); calls != nil {
		// The route's AWS calls, so they can be watched per route (the
		// invocation's own line, shared/platform/lambdafn, has them per function).
		attrs = append(attrs, "aws_calls", calls.Counts(), "aws_calls_total", calls.Total())
	}
	req.Log.InfoContext(ctx, "request", attrs...)
	return resp, nil
}

func (rt *Router) dispatch(ctx context.Context, req *Request) events.APIGatewayV2HTTPResponse {
	h, ok := rt.routes[req.Event.RouteKey]
	if !ok {
		return rt.errorResponse(req, apperr.New(apperr.ENOTFOUND, "no route %s", req.Event.RouteKey))
	}
	var lc map[string]any
	if a := req.Event.RequestContext.Authorizer; a != nil {
		lc = a.Lambda
	}
	if down, _ := lc[authctx.Unavailable].(bool); down {
		// The authorizer could not check the key: nothing runs.
		return rt.errorResponse(req, dependencyUnavailable("DynamoDB", "the API key could not be checked"))
	}
	// The authorizer guarantees a team; its absence is a wiring fault, and
	// refusing is the only safe answer.
	if req.TeamID == "" {
		return rt.errorResponse(req, apperr.New(apperr.EUNAUTHORIZED, "missing team context"))
	}
	// Over the team's rate (the authorizer counted it): refused before
	// anything runs, so a refused request changes nothing.
	// The keys are the authorizer's own (shared/platform/authctx): a literal here would
	// silently stop limiting the day the authorizer renamed its key.
	if limited, _ := lc[authctx.RateLimited].(bool); limited {
		after := retryAfter(lc[authctx.RetryAfter])
		e := apperr.New(apperr.ELIMIT, "too many requests for this team; retry after %d s", after).WithReason("TeamRateLimit")
		if perUser, ok := count(lc[authctx.UserRateLimit]); ok {
			// The person's own rate, not the team's: the rest of the
			// team may go on.
			e = apperr.New(apperr.ELIMIT, "too many requests for this user (at most %d a second); retry after %d s", perUser, after).
				WithReason("UserRateLimit").WithDetail("user_rate_limit", perUser)
		}
		resp := rt.errorResponse(req, e)
		resp.Headers["Retry-After"] = strconv.Itoa(after)
		return resp
	}
	if req.Caller.Member() && !rt.Members[req.Event.RouteKey] {
		// Decided by the route alone, before its flag, body or ids are
		// looked at: a member's refused request changes nothing.
		return rt.errorResponse(req, apperr.New(apperr.EFORBIDDEN, "a member may not call %s; a key or an admin may", req.Event.RouteKey).
			WithReason("RoleForbidden"))
	}
	if flag, off := rt.Disabled[req.Event.RouteKey]; off {
		// The feature is off in this stage: nothing of the request is
		// looked at, so nothing changes whatever it carries.
		return rt.errorResponse(req, apperr.New(apperr.ECONFLICT, "%s is turned off in this stage (feature flag %q)", req.Event.RouteKey, flag).
			WithReason("FeatureDisabled").WithDetail("flag", flag))
	}
	// The size of the body first: a body over the limit is 413 whatever
	// the path names (issue 24: a 1 MB body to a malformed id answered
	// 404, so a client could not tell it had sent too much).
	if len(req.Event.Body) > MaxBodyBytes {
		return rt.errorResponse(req, apperr.New(apperr.ETOOLARGE, "body exceeds %d bytes", MaxBodyBytes))
	}
	for name, v := range req.Event.PathParameters {
		if !ValidPathID(v) {
			// No resource has such an id: answered here, in the error
			// shape, before any lookup (a NUL or a 2 kB id never reaches
			// a key condition).
			return rt.errorResponse(req, apperr.New(apperr.ENOTFOUND, "no resource has the %s %q", name, v))
		}
	}
	if rt.Bodies != nil && !rt.Bodies[req.Event.RouteKey] && (req.Event.IsBase64Encoded || strings.TrimSpace(req.Event.Body) != "") {
		return rt.errorResponse(req, apperr.Invalid("body", "%s takes no body", req.Event.RouteKey))
	}
	key := header(req.Event.Headers, "idempotency-key")
	if req.Event.RequestContext.HTTP.Method == http.MethodPost && key != "" && rt.replay != nil {
		return rt.replay(ctx, req, h, key)
	}
	if req.Event.RequestContext.HTTP.Method == http.MethodPost && key != "" && rt.streaming {
		// A streamed create keeps no response record (there is no body
		// to replay): its key reaches the service, whose own reference
		// answers a repeat with what is stored (idempotency.Scope).
		if len(key) > 128 {
			return rt.errorResponse(req, apperr.Invalid("Idempotency-Key", "Idempotency-Key must be at most 128 characters"))
		}
		ctx = idempotency.WithKey(ctx, key)
	}
	return rt.run(ctx, req, h)
}

// retryAfter is the authorizer's retry_after in whole seconds: a JSON
// number once API Gateway has carried the context (an int when a test
// hands it over in-process), at least one second, and one second when it
// is missing or unreadable (the limiter counts per clock second).
// count is a whole number of the authorizer context: an int in process,
// a float64 once carried as JSON.
func count(v any) (int, bool) {
	switch n := v.(type) {
	case float64:
		return int(n), true
	case int:
		return n, true
	}
	return 0, false
}

func retryAfter(v any) int {
	var s float64
	switch n := v.(type) {
	case float64:
		s = n
	case int:
		s = float64(n)
	}
	if !(s >= 1) {
		return 1
	}
	return int(math.Ceil(s))
}

func (rt *Router) run(ctx context.Context, req *Request, h HandlerFunc) events.APIGatewayV2HTTPResponse {
	res, err := h(ctx, req)
	if err != nil {
		return rt.errorResponse(req, err)
	}
	if body, ok := res.Body.(Body); ok {
		// A streamed body: ServeStream writes it after the headers.
		req.stream = body
		resp := rawResponse(req, res.Status, "")
		resp.Headers["Content-Type"] = body.ContentType()
		return resp
	}
	return rt.jsonResponse(req, res.Status, res.Body)
}

func (rt *Router) idempotent(ctx context.Context, store idempotency.Store, req *Request, h HandlerFunc, key string) events.APIGatewayV2HTTPResponse {
	if len(key) > 128 {
		return rt.errorResponse(req, apperr.Invalid("Idempotency-Key", "Idempotency-Key must be at most 128 characters"))
	}
	sum := sha256.Sum256([]byte(req.Event.RouteKey + "\n" + req.Event.RawPath + "\n" + req.Event.Body))
	hash := hex.EncodeToString(sum[:])
	now := rt.Now()
	prev, err := store.Begin(ctx, req.TeamID, key, hash, now, idempotency.ClaimUntil(now, req.deadline, req.hasDeadline))
	if err != nil {
		return rt.errorResponse(req, err)
	}
	if prev != nil {
		switch {
		case prev.RequestHash != hash:
			return rt.errorResponse(req, apperr.New(apperr.ECONFLICT, "Idempotency-Key was used for a different request").WithReason("IdempotencyKeyReused"))
		case prev.State != idempotency.StateDone:
			resp := rt.errorResponse(req, apperr.New(apperr.ECONFLICT, "a request with this Idempotency-Key is in progress; "+
				"a claim left by a request that was cut off is released %d s after its function's time ran out (at most %d s)",
				int(idempotency.ClaimGrace.Seconds()), int(idempotency.PendingTTL.Seconds())).WithReason("RequestInProgress"))
			resp.Headers["Retry-After"] = "5"
			return resp
		}
		resp := rawResponse(req, prev.StatusCode, prev.Body)
		resp.Headers["Idempotent-Replayed"] = "true"
		return resp
	}
	if calls := awscalls.FromContext(ctx); calls != nil {
		req.writesBefore = calls.Writes()
	}
	resp := rt.run(idempotency.WithKey(ctx, key), req, h)
	// The record is written with the invocation's time: the handler's may
	// have run out (its 503 is released for the retry).
	ctx = req.tailContext()
	if resp.StatusCode >= 500 {
		// A server fault is worth retrying: release the key.
		if err := store.Abandon(ctx, req.TeamID, key); err != nil {
			req.Log.ErrorContext(ctx, "idempotency abandon failed", "error", err.Error())
		}
		return resp
	}
	rec := idempotency.Record{Key: key, RequestHash: hash, StatusCode: resp.StatusCode, Body: resp.Body}
	if err := store.Complete(ctx, req.TeamID, rec, rt.Now()); err != nil {
		req.Log.ErrorContext(ctx, "idempotency complete failed", "error", err.Error())
	}
	return resp
}

func header(h map[string]string, name string) string {
	if v, ok := h[name]; ok {
		return v
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

func rawResponse(req *Request, status int, body string) events.APIGatewayV2HTTPResponse {
	h := map[string]string{"X-Request-Id": req.RequestID}
	if body != "" {
		h["Content-Type"] = "application/json"
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: h, Body: body}
}

func (rt *Router) jsonResponse(req *Request, status int, v any) events.APIGatewayV2HTTPResponse {
	if v == nil || status == http.StatusNoContent {
		return rawResponse(req, status, "")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return rt.errorResponse(req, fmt.Errorf("encode response: %w", err))
	}
	return rawResponse(req, status, strings.TrimSuffix(buf.String(), "\n"))
}

func (rt *Router) errorResponse(req *Request, err error) events.APIGatewayV2HTTPResponse {
	eb, status := req.ErrorOf(err)
	body, _ := json.Marshal(eb)
	resp := rawResponse(req, status, string(body))
	if resp.StatusCode == http.StatusServiceUnavailable {
		// Nothing was changed: the same request may be sent again at once.
		resp.Headers["Retry-After"] = "1"
	}
	return resp
}

// ErrorOf is err in the API's error shape, with its status: what an error
// response carries, and a streamed response's error event once its body
// has started. An internal error is logged and answered without its text.
func (req *Request) ErrorOf(err error) (ErrorBody, int) {
	if cut := cutOff(req.ctx, err, req.writesBefore); cut != err {
		req.Log.WarnContext(req.tailContext(), "cut off by the deadline", "error", err.Error())
		err = cut
	}
	detail := ErrorDetail{Code: apperr.EINTERNAL, Message: "Internal error"}
	if e, ok := apperr.As(err); ok && e.Code != apperr.EINTERNAL {
		detail = ErrorDetail{Code: e.Code, Message: e.Message, Field: e.Field, Reason: e.Reason, Details: e.Details}
	} else {
		req.Log.ErrorContext(req.ctx, "internal error", "error", err.Error())
	}
	return ErrorBody{Error: detail, RequestID: req.RequestID}, Status(detail.Code)
}

// Traced names the request's trace in its answer (X-Trace-Id: the id
// that finds it in X-Ray, or locally with make trace) and gives the
// request's span its status: a 5xx is the function's failure, a 4xx the
// caller's (OpenTelemetry's HTTP server conventions). Serve does it for a
// Router's answers; a function answering HTTP without one (the A2A agent)
// calls it itself.
func Traced(ctx context.Context, resp *events.APIGatewayV2HTTPResponse) {
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 500 {
		span.SetStatus(codes.Error, http.StatusText(resp.StatusCode))
	}
	if id := tracing.TraceID(ctx); id != "" {
		if resp.Headers == nil {
			resp.Headers = map[string]string{}
		}
		resp.Headers[tracing.TraceIDHeader] = id
		// W3C Trace Context's traceresponse: its last two digits say
		// whether the trace was kept (01) or not sampled (00), when the
		// stage keeps a share of them.
		resp.Headers[tracing.ResponseHeader] = tracing.Traceparent(ctx)
	}
}
