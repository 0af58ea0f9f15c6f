package httpapi

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/conclave-ai/conclave/shared/platform/answerby"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/awscalls"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
)

// Body is a response written while it runs: a handler of the streaming API
// returns it as Response.Body, and ServeStream sends the status and
// headers first, then what WriteTo writes, as it writes it. An error
// before the body starts is the usual JSON error (the handler returns it);
// once the body has started, the body reports its own errors (an SSE
// error event).
type Body interface {
	ContentType() string
	// WriteTo writes the body to w until it ends or ctx does. A write
	// fails once the reader has gone away; a write may also wait for the
	// reader, so a body whose work must not wait (a turn) writes through
	// a buffer of its own.
	WriteTo(ctx context.Context, w io.Writer)
}

// NewStreamRouter returns the router of the streaming API (a REST API with
// streaming integrations): the same checks and error shape as the HTTP
// API's routers; a POST's Idempotency-Key reaches the service (no response
// record: a stream is not replayed as bytes).
func NewStreamRouter(log *slog.Logger) *Router {
	rt := NewRouter(log)
	rt.streaming = true
	return rt
}

// ServeStream is the Lambda handler of a streaming API function: the REST
// API's proxy event (payload 1.0) is read as the HTTP API's (the route key
// is the method and resource path, the authorizer's context the same
// keys), dispatched as Serve does, and answered as a streaming response.
// The invocation's context lives until the body has been read (aws-lambda-
// go cancels it after the response is sent), so the body runs on it.
func (rt *Router) ServeStream(ctx context.Context, ev events.APIGatewayProxyRequest) (*events.APIGatewayProxyStreamingResponse, error) {
	start := rt.Now()
	v2 := restEvent(ev)
	req := &Request{Event: &v2, RequestID: v2.RequestContext.RequestID}
	ctx = req.authorized(ctx, v2.RequestContext.Authorizer.Lambda)
	ctx = logctx.With(ctx, "request_id", req.RequestID, "team_id", req.TeamID, "route", v2.RouteKey)
	req.deadline, req.hasDeadline = ctx.Deadline()
	hctx, cancel := handlerContext(ctx, AnswerReserve)
	if dl, ok := hctx.Deadline(); ok {
		hctx = answerby.With(hctx, dl)
	}
	req.Log, req.ctx, req.tail = logctx.Bind(rt.Log, ctx), hctx, hctx
	resp := rt.dispatch(hctx, req)
	logLine := func() {
		attrs := []any{"status", resp.StatusCode, "latency_ms", rt.Now().Sub(start).Milliseconds(), "streamed", req.stream != nil}
		if calls := awscalls.FromContext(ctx); calls != nil {
			attrs = append(attrs, "aws_calls", calls.Counts(), "aws_calls_total", calls.Total())
		}
		req.Log.InfoContext(ctx, "request", attrs...)
	}
	out := &events.APIGatewayProxyStreamingResponse{StatusCode: resp.StatusCode, Headers: resp.Headers}
	if req.stream == nil {
		cancel()
		logLine()
		out.Body = strings.NewReader(resp.Body)
		return out, nil
	}
	// No proxy or client may buffer or transform the events.
	out.Headers["Cache-Control"] = "no-cache"
	out.Headers["X-Accel-Buffering"] = "no"
	pr, pw := io.Pipe()
	go func() {
		defer cancel()
		req.stream.WriteTo(hctx, pw)
		_ = pw.Close()
		logLine()
	}()
	out.Body = pr
	return out, nil
}

// restEvent reads a REST API proxy event (payload 1.0) as the HTTP API's
// payload 2.0 event the routers take. A REST API hands the authorizer's
// context to the integration with every value a string; the keys the
// routers read as booleans and numbers are read back as such.
func restEvent(ev events.APIGatewayProxyRequest) events.APIGatewayV2HTTPRequest {
	headers := map[string]string{}
	for k, v := range ev.Headers {
		headers[strings.ToLower(k)] = v
	}
	for k, vs := range ev.MultiValueHeaders {
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	authz := map[string]any{}
	for k, v := range ev.RequestContext.Authorizer {
		authz[k] = v
		s, isString := v.(string)
		switch {
		case !isString:
		case k == authctx.RateLimited || k == authctx.Unavailable:
			authz[k] = s == "true"
		case k == authctx.RetryAfter || k == authctx.UserRateLimit:
			if n, err := strconv.ParseFloat(s, 64); err == nil {
				authz[k] = n
			}
		}
	}
	query := ev.QueryStringParameters
	var raw bytes.Buffer
	for k, v := range query {
		if raw.Len() > 0 {
			raw.WriteByte('&')
		}
		raw.WriteString(k + "=" + v)
	}
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: ev.HTTPMethod + " " + ev.Resource, RawPath: ev.Path, RawQueryString: raw.String(),
		Headers: headers, QueryStringParameters: query, PathParameters: ev.PathParameters,
		Body: ev.Body, IsBase64Encoded: ev.IsBase64Encoded,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: ev.HTTPMethod + " " + ev.Resource, AccountID: ev.RequestContext.AccountID, Stage: ev.RequestContext.Stage,
			RequestID: ev.RequestContext.RequestID, APIID: ev.RequestContext.APIID, DomainName: ev.RequestContext.DomainName,
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: ev.HTTPMethod, Path: ev.Path, SourceIP: ev.RequestContext.Identity.SourceIP, UserAgent: ev.RequestContext.Identity.UserAgent,
			},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: authz},
		},
	}
}
