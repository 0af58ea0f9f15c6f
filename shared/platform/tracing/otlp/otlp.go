// Package otlp sends a function's spans to an OTLP/HTTP traces endpoint
// in OTLP's JSON encoding: X-Ray's (signed with SigV4 for the function's
// role) deployed, the local edge's locally. It is this package rather than
// the SDK's otlptracehttp because that one links gRPC and the protobuf
// runtime into every function (the expert-gate's binary went from 11.3 to
// 20.6 MB, +83%, against +2% for the SDK with this package), while X-Ray's
// OTLP endpoint and the edge both read the JSON encoding.
package otlp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/conclave-ai/conclave/shared/platform/tracing"
)

// NewProvider is the tracer provider of cfg.Service, sending its spans
// to exporter (nil: nowhere).
func NewProvider(cfg tracing.Config, exporter sdktrace.SpanExporter) *tracing.Provider {
	ratio := float64(min(max(cfg.SamplePercent, 0), 100)) / 100
	opts := []sdktrace.TracerProviderOption{
		// A hop follows its parent's decision, so a trace is whole or
		// absent; a new trace is kept at the stage's rate.
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
		sdktrace.WithResource(resourceOf(cfg)),
	}
	if exporter != nil {
		// Batched, and flushed before each invocation returns
		// (Provider.Flush): Lambda freezes the process between
		// invocations, so nothing may wait for a timer.
		opts = append(opts, sdktrace.WithSpanProcessor(sdktrace.NewBatchSpanProcessor(exporter, sdktrace.WithBatchTimeout(time.Second))))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return tracing.NewProvider(tp, cfg.Content, tp.ForceFlush, tp.Shutdown)
}

// resourceOf names the function as OpenTelemetry names a service.
func resourceOf(cfg tracing.Config) *resource.Resource {
	attrs := []attribute.KeyValue{attribute.String("service.name", cfg.Service),
		attribute.String("service.namespace", "conclave"), attribute.String("cloud.provider", "aws")}
	if cfg.Stage != "" {
		attrs = append(attrs, attribute.String("deployment.environment.name", cfg.Stage))
	}
	if cfg.Function != "" {
		attrs = append(attrs, attribute.String("faas.name", cfg.Function))
	}
	return resource.NewSchemaless(attrs...)
}

// exporter posts spans to an OTLP/HTTP traces endpoint in OTLP's JSON
// encoding (the OTLP specification's "JSON Protobuf Encoding": ids in
// hex, 64-bit integers as strings, enums as numbers).
type exporter struct {
	endpoint string
	service  string
	client   *http.Client
	// sign signs a request for X-Ray (nil: an endpoint that takes none,
	// the local edge's).
	sign func(ctx context.Context, req *http.Request, body []byte) error
}

// exportTimeout bounds one export: a turn's answer never waits longer
// on its trace.
const exportTimeout = 2 * time.Second

// New is the exporter of the function service to endpoint; awsCfg's
// credentials sign the requests when the endpoint is AWS's (X-Ray's OTLP
// endpoint takes SigV4 only).
func New(endpoint, service string, awsCfg aws.Config) sdktrace.SpanExporter {
	e := &exporter{endpoint: endpoint, service: service, client: &http.Client{Timeout: exportTimeout}}
	if u, err := url.Parse(endpoint); err == nil && (strings.HasSuffix(u.Hostname(), ".amazonaws.com") || strings.HasSuffix(u.Hostname(), ".amazonaws.com.cn")) {
		region := awsCfg.Region
		signer := v4.NewSigner()
		e.sign = func(ctx context.Context, req *http.Request, body []byte) error {
			creds, err := awsCfg.Credentials.Retrieve(ctx)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(body)
			return signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "xray", region, time.Now())
		}
	}
	return e
}

// ExportSpans implements sdktrace.SpanExporter.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body, err := json.Marshal(encode(spans))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, exportTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if e.sign != nil {
		if err := e.sign(ctx, req, body); err != nil {
			return fmt.Errorf("tracing: sign: %w", err)
		}
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("tracing: export: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("tracing: export: %s", resp.Status)
	}
	return nil
}

// Shutdown implements sdktrace.SpanExporter.
func (e *exporter) Shutdown(context.Context) error { return nil }

// The OTLP JSON shapes (opentelemetry-proto's trace.proto and common.proto).
type (
	// Export is an ExportTraceServiceRequest.
	Export struct {
		ResourceSpans []ResourceSpans `json:"resourceSpans"`
	}
	// ResourceSpans are one service's spans.
	ResourceSpans struct {
		Resource   Resource     `json:"resource"`
		ScopeSpans []ScopeSpans `json:"scopeSpans"`
	}
	// Resource names the service.
	Resource struct {
		Attributes []KeyValue `json:"attributes"`
	}
	// ScopeSpans are the spans of one instrumentation scope.
	ScopeSpans struct {
		Scope struct {
			Name string `json:"name"`
		} `json:"scope"`
		Spans []Span `json:"spans"`
	}
	// Span is one span.
	Span struct {
		TraceID      string     `json:"traceId"`
		SpanID       string     `json:"spanId"`
		ParentSpanID string     `json:"parentSpanId,omitempty"`
		Name         string     `json:"name"`
		Kind         int        `json:"kind"`
		Start        string     `json:"startTimeUnixNano"`
		End          string     `json:"endTimeUnixNano"`
		Attributes   []KeyValue `json:"attributes,omitempty"`
		Events       []Event    `json:"events,omitempty"`
		Links        []SpanLink `json:"links,omitempty"`
		Status       Status     `json:"status"`
	}
	// Event is a span event.
	Event struct {
		Time       string     `json:"timeUnixNano"`
		Name       string     `json:"name"`
		Attributes []KeyValue `json:"attributes,omitempty"`
	}
	// SpanLink is a span the span follows without being its child.
	SpanLink struct {
		TraceID    string     `json:"traceId"`
		SpanID     string     `json:"spanId"`
		Attributes []KeyValue `json:"attributes,omitempty"`
	}
	// Status is a span's outcome: 0 unset, 1 ok, 2 error.
	Status struct {
		Code    int    `json:"code,omitempty"`
		Message string `json:"message,omitempty"`
	}
	// KeyValue is one attribute.
	KeyValue struct {
		Key   string `json:"key"`
		Value Value  `json:"value"`
	}
	// Value is an attribute's value: one field set.
	Value struct {
		String *string  `json:"stringValue,omitempty"`
		Bool   *bool    `json:"boolValue,omitempty"`
		Int    *string  `json:"intValue,omitempty"`
		Double *float64 `json:"doubleValue,omitempty"`
		Array  *struct {
			Values []Value `json:"values"`
		} `json:"arrayValue,omitempty"`
	}
)

// encode groups spans by resource and scope, as OTLP sends them.
func encode(spans []sdktrace.ReadOnlySpan) Export {
	var out Export
	byResource := map[string]int{}
	for _, s := range spans {
		key := s.Resource().String()
		i, ok := byResource[key]
		if !ok {
			i = len(out.ResourceSpans)
			byResource[key] = i
			rs := ResourceSpans{Resource: Resource{Attributes: attrs(s.Resource().Attributes())}}
			rs.ScopeSpans = []ScopeSpans{{}}
			rs.ScopeSpans[0].Scope.Name = tracing.Scope
			out.ResourceSpans = append(out.ResourceSpans, rs)
		}
		ss := &out.ResourceSpans[i].ScopeSpans[0]
		ss.Spans = append(ss.Spans, span(s))
	}
	return out
}

func span(s sdktrace.ReadOnlySpan) Span {
	sc := s.SpanContext()
	out := Span{
		TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(), Name: s.Name(), Kind: int(s.SpanKind()),
		Start: nanos(s.StartTime()), End: nanos(s.EndTime()), Attributes: attrs(s.Attributes()),
	}
	if p := s.Parent(); p.SpanID().IsValid() {
		out.ParentSpanID = p.SpanID().String()
	}
	for _, e := range s.Events() {
		out.Events = append(out.Events, Event{Time: nanos(e.Time), Name: e.Name, Attributes: attrs(e.Attributes)})
	}
	for _, l := range s.Links() {
		out.Links = append(out.Links, SpanLink{TraceID: l.SpanContext.TraceID().String(), SpanID: l.SpanContext.SpanID().String(), Attributes: attrs(l.Attributes)})
	}
	// otel's codes (Unset 0, Error 1, Ok 2) are not OTLP's (Unset 0, Ok
	// 1, Error 2).
	switch s.Status().Code {
	case codes.Error:
		out.Status = Status{Code: 2, Message: s.Status().Description}
	case codes.Ok:
		out.Status = Status{Code: 1}
	}
	return out
}

func nanos(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }

func attrs(kvs []attribute.KeyValue) []KeyValue {
	out := make([]KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, KeyValue{Key: string(kv.Key), Value: value(kv.Value)})
	}
	return out
}

func value(v attribute.Value) Value {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return Value{Bool: &b}
	case attribute.INT64:
		s := strconv.FormatInt(v.AsInt64(), 10)
		return Value{Int: &s}
	case attribute.FLOAT64:
		f := v.AsFloat64()
		return Value{Double: &f}
	case attribute.STRINGSLICE:
		return array(v.AsStringSlice(), attribute.StringValue)
	case attribute.INT64SLICE:
		return array(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return array(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.BOOLSLICE:
		return array(v.AsBoolSlice(), attribute.BoolValue)
	}
	s := v.Emit()
	return Value{String: &s}
}

func array[T any](items []T, of func(T) attribute.Value) Value {
	out := Value{Array: &struct {
		Values []Value `json:"values"`
	}{Values: make([]Value, 0, len(items))}}
	for _, it := range items {
		out.Array.Values = append(out.Array.Values, value(of(it)))
	}
	return out
}
