// Package httptrace makes an HTTP client's requests client spans that
// carry the trace on (W3C traceparent): the A2A agents' and the MCP
// servers' calls.
package httptrace

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclave-ai/conclave/shared/platform/tracing"
)

// Transport makes each request of base a client span and sends the span
// on as the W3C traceparent header: an A2A agent or an MCP server that
// traces continues the turn's trace (one that does not ignores the
// header). peer names what is called (a2a, mcp).
func Transport(base http.RoundTripper, peer string) http.RoundTripper {
	return &transport{base: base, peer: peer}
}

type transport struct {
	base http.RoundTripper
	peer string
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, span := tracing.Start(req.Context(), req.Method+" "+t.peer, trace.SpanKindClient,
		attribute.String("http.request.method", req.Method), attribute.String("server.address", req.URL.Hostname()),
		attribute.String("conclave.peer", t.peer))
	defer span.End()
	req = req.Clone(ctx)
	if tp := tracing.Traceparent(ctx); tp != "" {
		req.Header.Set(tracing.HeaderName, tp)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		tracing.Fail(ctx, span, err)
		return nil, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 500 {
		span.SetStatus(codes.Error, resp.Status)
	}
	return resp, nil
}
