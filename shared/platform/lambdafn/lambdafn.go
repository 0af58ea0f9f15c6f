// Package lambdafn is the bootstrap every function's main shares: it loads
// the AWS configuration and the environment contract once per cold start,
// hands them to the function's own builder and starts the Lambda runtime.
// It links no AWS service client: each builder (shared/wire/<stem>fn) links
// exactly the clients its function is granted.
package lambdafn

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/conclave-ai/conclave/shared/platform/awscalls"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/platform/tracing"
	"github.com/conclave-ai/conclave/shared/platform/tracing/awstrace"
	"github.com/conclave-ai/conclave/shared/platform/tracing/otlp"
)

// Deps is what a builder gets: its name in the manifest, its environment,
// the loaded AWS configuration and its logger.
type Deps struct {
	Name   string
	Config settings.Config
	AWS    aws.Config
	Log    *slog.Logger
	// AfterAnswer runs an invocation's flush of its spans once its answer
	// has gone back: the internal extension's post-invoke phase in Lambda
	// (Main), a goroutine in the local cloud, whose process is never
	// frozen. nil: the door flushes before it answers.
	AfterAnswer func(flush func())
}

// Build wires one function and returns its Lambda handler (any type
// lambda.NewHandler accepts). Builders never load configuration or exit.
type Build func(Deps) (any, error)

// NewLogger returns the JSON logger every function uses. Lines logged with
// a context carry the context's attributes (shared/platform/logctx): the Lambda
// request id from here, the team, route and API request id from the HTTP
// layer, the task from the task steps.
func NewLogger(function string) *slog.Logger {
	return logctx.Wrap(slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("function", function))
}

// Main is the whole main() of a function: load configuration once per cold
// start, wire, and hand the handler to the Lambda runtime. A variable the
// function declares that is missing or malformed stops the cold start
// before anything is built: one log line per such variable, exit status 1
// (Lambda reports an init error and the function never serves).
func Main(name string, build Build) {
	log := NewLogger(name)
	// Code that logs through slog's default logger (a service built
	// without one) writes the same JSON, with the context's ids.
	slog.SetDefault(log)
	cfg, err := LoadConfig(name, os.LookupEnv)
	if err != nil {
		LogConfigError(log, err)
		os.Exit(1)
	}
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("load aws config", "error", err.Error())
		os.Exit(1)
	}
	d := Deps{Name: name, Config: cfg, AWS: awsCfg, Log: log}
	if api := os.Getenv("AWS_LAMBDA_RUNTIME_API"); api != "" && cfg.TraceEndpoint != "" {
		// The spans leave after the answer (extension.go); without the
		// extension they leave before it.
		if ext, err := registerExtension(api); err == nil {
			d.AfterAnswer = ext.after
		} else {
			log.Warn("tracing extension", "error", err.Error())
		}
	}
	h, err := Wire(build, d)
	if err != nil {
		log.Error("wire", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(h)
}

// LoadConfig reads the configuration the function name declares
// (manifest.Env) through get (os.LookupEnv), strictly (settings.Load).
func LoadConfig(name string, get func(string) (string, bool)) (settings.Config, error) {
	names, ok := manifest.Env[name]
	if !ok {
		return settings.Config{}, fmt.Errorf("function %q declares no environment (manifest.Env)", name)
	}
	return settings.Load(names, get)
}

// LogConfigError logs err from LoadConfig: one line per variable it names,
//
//	{"level":"ERROR","msg":"configuration","function":…,"variable":"TEAM_RATE_LIMIT","error":"not a number: \"abc\""}
//
// (or one line without a variable for any other error).
func LogConfigError(log *slog.Logger, err error) {
	vars := settings.VarErrors(err)
	if len(vars) == 0 {
		log.Error("configuration", "error", err.Error())
	}
	for _, v := range vars {
		log.Error("configuration", "variable", v.Name, "error", v.Err.Error())
	}
}

// Wire builds a function with build and d, every AWS client it builds
// counting its calls (awscalls), and returns its handler counted and
// logged per invocation (see Counted). Main and the local cloud's registry
// (shared/wire) both wire through it, so a function is counted alike in AWS
// and locally.
//
// A streaming function's handler (a Streamer) is returned as it is, wrapped
// only to count and log: Counted's handler returns bytes, which would
// buffer the stream, and the Lambda runtime streams a response only when
// the handler's value is a reader (aws-lambda-go's handler.go).
func Wire(build Build, d Deps) (any, error) {
	d.AWS = d.AWS.Copy()
	awscalls.Instrument(&d.AWS)
	// Every AWS call is a client span of the invocation's trace.
	awstrace.Instrument(&d.AWS)
	var exporter sdktrace.SpanExporter
	if d.Config.TraceEndpoint != "" {
		exporter = otlp.New(d.Config.TraceEndpoint, d.Name, d.AWS)
	}
	tp := otlp.NewProvider(tracing.Config{Service: d.Name, Stage: d.Config.Stage, Function: os.Getenv("AWS_LAMBDA_FUNCTION_NAME"), SamplePercent: d.Config.TraceSamplePercent, Content: d.Config.TraceContent}, exporter)
	d.Log = logctx.Wrap(d.Log)
	h, err := build(d)
	if err != nil {
		return nil, err
	}
	flush := func(ctx context.Context) {
		f := func() { tp.Flush(context.WithoutCancel(ctx)) }
		if d.AfterAnswer != nil {
			d.AfterAnswer(f)
			return
		}
		f()
	}
	if st, ok := h.(Streamer); ok {
		return st.counted(d.Log, d.Name, tp, flush), nil
	}
	return traced(Counted(h, d.Log), d.Name, tp, flush), nil
}

// traced runs each invocation of h in its span (tracing.StartInvocation:
// the trace its payload continues, or a new one), with the function's
// provider in its context, and has its spans sent (flush: after the
// answer, or before it returns: Lambda freezes the process once it has
// and the extension is done).
func traced(h lambda.Handler, name string, tp *tracing.Provider, flush func(context.Context)) lambda.Handler {
	return handlerFunc(func(ctx context.Context, payload []byte) ([]byte, error) {
		ctx = tracing.WithProvider(ctx, tp)
		ctx, span := tracing.StartInvocation(ctx, name, payload)
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			span.SetAttributes(attribute.String("faas.invocation_id", lc.AwsRequestID))
		}
		out, err := h.Invoke(ctx, payload)
		tracing.End(ctx, span, err)
		flush(ctx)
		return out, err
	})
}

// handlerFunc is a function as a lambda.Handler.
type handlerFunc func(ctx context.Context, payload []byte) ([]byte, error)

// Invoke implements lambda.Handler.
func (f handlerFunc) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return f(ctx, payload)
}

// Counted wraps h (any handler lambda.NewHandler accepts) so that each
// invocation has its own AWS call counter in its context — the one its
// caller made, when the local edge stands in for the Lambda service and
// reads it back, or a new one — and ends with one JSON log line:
//
//	{"msg":"invocation","function":…,"request_id":…,"duration_ms":…,
//	 "aws_calls":{"DynamoDB.GetItem":1,…},"aws_calls_total":…,"aws_retries":…}
//
// which a CloudWatch Logs metric filter or Logs Insights query reads (see
// docs/testing.md, "AWS calls per operation").
func Counted(h any, log *slog.Logger) lambda.Handler {
	c := &counted{log: logctx.Wrap(log)}
	c.inner.New = func() any { return lambda.NewHandler(h) }
	return c
}

// counted keeps a pool of handlers, one per invocation running at once:
// aws-lambda-go's handler answers with the bytes of a buffer it takes
// from its own pool and puts back, reset, as Invoke returns, so two
// invocations of one handler at once (the local edge runs them
// concurrently in one process; Lambda never does) could each read the
// other's answer being written (a corrupt response, the gateway's bare
// 500). Each invocation has a handler to itself and copies its answer
// before handing the handler back.
type counted struct {
	inner sync.Pool // of lambda.Handler
	log   *slog.Logger
}

// Invoke implements lambda.Handler.
func (c *counted) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	calls := awscalls.FromContext(ctx)
	if calls == nil {
		ctx, calls = awscalls.NewContext(ctx)
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		ctx = logctx.With(ctx, "lambda_request_id", lc.AwsRequestID)
	}
	start := time.Now()
	h := c.inner.Get().(lambda.Handler)
	out, err := h.Invoke(ctx, payload)
	out = bytes.Clone(out)
	c.inner.Put(h)
	attrs := []any{"duration_ms", time.Since(start).Milliseconds(),
		"aws_calls", calls.Counts(), "aws_calls_total", calls.Total(), "aws_retries", calls.Retries()}
	if err != nil {
		attrs = append(attrs, "error", err.Error())
	}
	c.log.InfoContext(ctx, "invocation", attrs...)
	return out, err
}
