// Package tracing is how every function records its part of a trace: one
// trace per turn, across every function and workflow (architecture
// decision 13), on the OpenTelemetry Go SDK with the GenAI semantic
// conventions.
//
// Each function has its own tracer provider, made at its door
// (shared/platform/lambdafn) and carried in the invocation's context
// (WithProvider), never the global one: the local edge runs every
// function in one process, and each must record as itself. Code below the
// door starts spans with Start, which takes the context's provider; with
// none, it records nothing.
//
// The package links neither net/http nor the AWS SDK, so the domain's
// ports may start spans: the export (otlp), the AWS calls' spans
// (awstrace) and the HTTP clients' (httptrace) are packages of their own,
// which the door (shared/platform/lambdafn) and the adapters link.
package tracing

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
)

// Scope is the instrumentation scope of every span Conclave makes.
const Scope = "github.com/conclave-ai/conclave"

// Config is a function's tracing, from the stage's settings
// (settings.EnvTrace*).
type Config struct {
	// Service is the function's name in the manifest (service.name).
	Service string
	// Stage is the stage it runs in (deployment.environment.name), when
	// the function knows it; Function is its physical name in Lambda
	// (faas.name: the stage's prefix is in it), when it runs there. Two
	// stages may share an account and region, and so X-Ray.
	Stage, Function string
	// SamplePercent is the share of new traces recorded (0-100).
	SamplePercent int
	// Content records prompts, completions and tool arguments as span
	// events.
	Content bool
}

// Provider is one function's tracer provider: the SDK's, made by
// otlp.NewProvider (this package holds only OpenTelemetry's API, which
// links no net/http: the SDK's global package does).
type Provider struct {
	tracer   trace.Tracer
	content  bool
	flush    func(context.Context) error
	shutdown func(context.Context) error
}

// NewProvider wraps tp: flush sends every ended span, shutdown stops it.
func NewProvider(tp trace.TracerProvider, content bool, flush, shutdown func(context.Context) error) *Provider {
	return &Provider{tracer: tp.Tracer(Scope), content: content, flush: flush, shutdown: shutdown}
}

// Flush sends every ended span. The door calls it before an invocation
// returns; a span still open (work the invocation left running) goes
// with a later flush.
func (p *Provider) Flush(ctx context.Context) {
	if p != nil && p.flush != nil {
		_ = p.flush(ctx)
	}
}

// Shutdown flushes and stops the provider (tests, the local cloud's end).
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.shutdown == nil {
		return nil
	}
	return p.shutdown(ctx)
}

type providerKey struct{}

// WithProvider carries p in ctx: Start below it records with p.
func WithProvider(ctx context.Context, p *Provider) context.Context {
	return context.WithValue(ctx, providerKey{}, p)
}

func providerOf(ctx context.Context) *Provider {
	p, _ := ctx.Value(providerKey{}).(*Provider)
	return p
}

// Recording reports whether ctx has a provider to record with.
func Recording(ctx context.Context) bool { return providerOf(ctx) != nil }

// Content reports whether the function records prompt and completion
// text (Config.Content).
func Content(ctx context.Context) bool {
	p := providerOf(ctx)
	return p != nil && p.content
}

// Start starts a span named name under ctx's span, with the context's
// provider; without one it returns a span that records nothing.
func Start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	p := providerOf(ctx)
	if p == nil {
		return ctx, noop.Span{}
	}
	return p.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// StartRoot starts a span that begins a trace, or continues the one
// traceparent names (a hop of Conclave's own: a payload's trace field, a
// message attribute). links are spans it follows without being their
// child: a client's traceparent, which is never trusted as a parent.
func StartRoot(ctx context.Context, name string, kind trace.SpanKind, traceparent string, links []trace.Link, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	p := providerOf(ctx)
	if p == nil {
		return ctx, noop.Span{}
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(kind), trace.WithAttributes(attrs...), trace.WithLinks(links...)}
	if sc := parse(traceparent); sc.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	} else {
		opts = append(opts, trace.WithNewRoot())
	}
	return p.tracer.Start(ctx, name, opts...)
}

// End ends span with err's status: an error marks the span failed (Fail).
func End(ctx context.Context, span trace.Span, err error) {
	if err != nil {
		Fail(ctx, span, err)
	}
	span.End()
}

// Fail marks span failed by err. Its text is recorded only when the stage
// records content (Content): an error can carry what it failed on (a
// provider's answer quoting the prompt, a remote agent's failure restating
// the request, a refused item); otherwise the span names its kind alone
// (error.type: its apperr code, or its Go type).
func Fail(ctx context.Context, span trace.Span, err error) {
	kind := errorType(err)
	span.SetAttributes(attribute.String("error.type", kind))
	if Content(ctx) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return
	}
	span.SetStatus(codes.Error, kind)
}

// errorType names err without its text.
func errorType(err error) string {
	var coded interface{ ErrorCode() string } // smithy's API errors
	if errors.As(err, &coded) && coded.ErrorCode() != "" {
		return coded.ErrorCode()
	}
	if c := apperr.Code(err); c != apperr.EINTERNAL {
		return c
	}
	for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(u) {
		err = u
	}
	return fmt.Sprintf("%T", err)
}

// Traceparent is ctx's span as a W3C traceparent header value, for the
// next hop to continue ("" when ctx has no valid span). Written here
// rather than with otel's propagation package, which links net/http into
// every port that starts a span.
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + hex.EncodeToString([]byte{byte(sc.TraceFlags())})
}

// TraceID is ctx's trace id as 32 hex digits ("" without one): the
// answers' X-Trace-Id, and what routing decisions, tasks, sessions and
// plans store.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.TraceID().IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// Link is traceparent as a link ("" or malformed: none).
func Link(traceparent string, attrs ...attribute.KeyValue) []trace.Link {
	sc := parse(traceparent)
	if !sc.IsValid() {
		return nil
	}
	return []trace.Link{{SpanContext: sc, Attributes: attrs}}
}

// parse reads a W3C traceparent ("00-<trace>-<span>-<flags>"; a later
// version's may carry more fields after them): anything else is no span.
func parse(traceparent string) trace.SpanContext {
	parts := strings.Split(strings.TrimSpace(traceparent), "-")
	if len(parts) < 4 || len(parts[0]) != 2 || parts[0] == "ff" || (parts[0] == "00" && len(parts) != 4) ||
		len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 {
		return trace.SpanContext{}
	}
	tid, err1 := trace.TraceIDFromHex(parts[1])
	sid, err2 := trace.SpanIDFromHex(parts[2])
	flags, err3 := hex.DecodeString(parts[3])
	if err1 != nil || err2 != nil || err3 != nil || strings.ToLower(traceparent) != traceparent {
		return trace.SpanContext{}
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid,
		TraceFlags: trace.TraceFlags(flags[0]) & trace.FlagsSampled, Remote: true})
}
