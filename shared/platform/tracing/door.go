package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// The hops that carry a trace, and where (architecture decision 13):
//
//   - a Lambda invoke of Conclave's own (the gate), a Step Functions
//     state's payload: the payload's top-level "trace" field;
//   - an EventBridge event: its detail's "trace" field (declared in every
//     event's schema), whether the event reaches a function from a rule
//     or as an SQS message's body;
//   - an SQS message: its "traceparent" message attribute;
//   - an HTTP request (API Gateway): its traceparent header, which a
//     client sets, so it is a link and never the parent.
//
// Field is the payload field's name.
const Field = "trace"

// AttributeName is the SQS message attribute, and HeaderName the HTTP
// header, of a W3C traceparent.
const (
	AttributeName = "traceparent"
	HeaderName    = "traceparent"
	// TraceIDHeader names the trace in every answer a function gives.
	TraceIDHeader = "X-Trace-Id"
	// ResponseHeader is W3C Trace Context's traceresponse: the request's
	// span, its flags saying whether the trace was sampled.
	ResponseHeader = "traceresponse"
)

// event is what the door reads of any invocation's payload.
type event struct {
	Trace  string `json:"trace"`
	Detail *struct {
		Trace string `json:"trace"`
	} `json:"detail"`
	Records []struct {
		EventSource       string `json:"eventSource"`
		Body              string `json:"body"`
		MessageAttributes map[string]struct {
			StringValue *string `json:"stringValue"`
		} `json:"messageAttributes"`
	} `json:"Records"`
	// API Gateway: the HTTP API's payload 2.0 and the REST API's 1.0.
	RouteKey   string            `json:"routeKey"`
	HTTPMethod string            `json:"httpMethod"`
	Resource   string            `json:"resource"`
	Headers    map[string]string `json:"headers"`
	Request    *json.RawMessage  `json:"requestContext"`
}

// StartInvocation starts the span of one invocation of the function
// service, from its payload: a hop's trace continues, an HTTP request
// begins a trace (named by its route) linked to the client's traceparent,
// anything else begins one.
func StartInvocation(ctx context.Context, service string, payload []byte) (context.Context, trace.Span) {
	if providerOf(ctx) == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	attrs := []attribute.KeyValue{attribute.String("faas.name", service)}
	if tp, ok := leadingTrace(payload); ok {
		// A hop of Conclave's own (Inject puts the field first): the rest
		// of the payload, the gate's team of agents perhaps, is not read.
		return StartRoot(ctx, service, trace.SpanKindServer, tp, nil, attrs...)
	}
	var ev event
	_ = json.Unmarshal(payload, &ev)
	name, kind, parent := service, trace.SpanKindServer, ev.Trace
	var links []trace.Link
	switch {
	case ev.Request != nil && (ev.RouteKey != "" || ev.HTTPMethod != ""):
		return StartHTTP(ctx, service, httpName(ev), ev.Headers)
	case ev.Detail != nil:
		kind, parent = trace.SpanKindConsumer, ev.Detail.Trace
		attrs = append(attrs, attribute.String("faas.trigger", "pubsub"))
	case len(ev.Records) > 0:
		kind = trace.SpanKindConsumer
		attrs = append(attrs, attribute.String("faas.trigger", "pubsub"), attribute.Int("messaging.batch.message_count", len(ev.Records)))
		parent, links = records(ev)
	}
	return StartRoot(ctx, name, kind, parent, links, attrs...)
}

// StartHTTP starts the span of an HTTP request's invocation: it begins a
// trace, named by the route ("POST /v1/conversations/{id}/messages"),
// linked to the client's traceparent header if it sent one.
func StartHTTP(ctx context.Context, service, route string, headers map[string]string) (context.Context, trace.Span) {
	method, path, _ := strings.Cut(route, " ")
	return StartRoot(ctx, route, trace.SpanKindServer, "", Link(header(headers, HeaderName), attribute.String("conclave.link", "client")),
		attribute.String("faas.name", service), attribute.String("faas.trigger", "http"),
		attribute.String("http.request.method", method), attribute.String("http.route", path))
}

// records are an SQS batch's traces: one message's is the parent, a
// batch's are links (OpenTelemetry's messaging conventions).
func records(ev event) (string, []trace.Link) {
	var tps []string
	for _, r := range ev.Records {
		tp := ""
		if a, ok := r.MessageAttributes[AttributeName]; ok && a.StringValue != nil {
			tp = *a.StringValue
		} else if strings.Contains(r.Body, `"`+Field+`"`) {
			// An EventBridge event delivered by a rule to the queue.
			var body event
			if json.Unmarshal([]byte(r.Body), &body) == nil && body.Detail != nil {
				tp = body.Detail.Trace
			}
		}
		tps = append(tps, tp)
	}
	if len(tps) == 1 {
		return tps[0], nil
	}
	var links []trace.Link
	for _, tp := range tps {
		links = append(links, Link(tp)...)
	}
	return "", links
}

func httpName(ev event) string {
	if ev.RouteKey != "" && ev.RouteKey != "$default" {
		return ev.RouteKey
	}
	return ev.HTTPMethod + " " + ev.Resource
}

// header is a header's value whatever its case (API Gateway passes the
// client's).
func header(h map[string]string, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// Inject adds ctx's span to obj, a JSON object, as its Field ("trace"):
// the next hop's door continues the trace from there (an EventBridge
// event's detail, a Step Functions input, a Lambda payload). obj is
// returned as it is when ctx has no span or obj is not an object. The
// field goes first, spliced in without decoding obj (the gate's payload
// carries the team's agents, and its door reads only that first field);
// an object that may hold the field already is decoded and the field
// replaced.
func Inject(ctx context.Context, obj []byte) []byte {
	tp := Traceparent(ctx)
	if tp == "" {
		return obj
	}
	rest := bytes.TrimLeft(obj, " \t\r\n")
	if len(rest) < 2 || rest[0] != '{' {
		return obj
	}
	if !bytes.Contains(rest, []byte(`"`+Field+`"`)) {
		out := make([]byte, 0, len(rest)+len(tp)+16)
		out = append(append(append(out, `{"`+Field+`":"`...), tp...), '"')
		if body := bytes.TrimLeft(rest[1:], " \t\r\n"); len(body) > 0 && body[0] != '}' {
			out = append(out, ',')
		}
		return append(out, rest[1:]...)
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil || m == nil {
		return obj
	}
	m[Field], _ = json.Marshal(tp)
	out, err := json.Marshal(m)
	if err != nil {
		return obj
	}
	return out
}

// leadingTrace reads the payload's first field when it is Field (as
// Inject writes it), without reading the rest.
func leadingTrace(payload []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	if k, err := dec.Token(); err != nil || k != Field {
		return "", false
	}
	v, err := dec.Token()
	tp, ok := v.(string)
	return tp, err == nil && ok
}
