package tracing_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclave-ai/conclave/shared/platform/tracing"
	"github.com/conclave-ai/conclave/shared/platform/tracing/otlp"
	"github.com/conclave-ai/conclave/shared/platform/tracing/tracingtest"
)

// Spans go out as OTLP's JSON encoding when the door flushes: ids in
// hex, the parent named, 64-bit integers as strings, OTLP's status codes
// (error is 2, where the Go API's is 1), the service as a resource.
func TestSpansAreExportedAsOTLPJSONOnFlush(t *testing.T) {
	p, c := tracingtest.New(t, true)
	ctx := tracing.WithProvider(context.Background(), p)
	ctx, root := tracing.StartRoot(ctx, "POST /v1/things", trace.SpanKindServer, "", nil)
	_, child := tracing.Start(ctx, "DynamoDB.PutItem", trace.SpanKindClient, attribute.Int("n", 7), attribute.StringSlice("xs", []string{"a"}))
	tracing.End(ctx, child, errors.New("boom"))
	root.End()
	assert.Empty(t, c.Spans(), "nothing leaves before the flush")
	p.Flush(context.Background())

	got := c.Spans()
	require.Len(t, got, 2)
	assert.Equal(t, "application/json", c.Types[0])
	r, k := got["POST /v1/things"], got["DynamoDB.PutItem"]
	assert.Regexp(t, `^[0-9a-f]{32}$`, r.TraceID)
	assert.Regexp(t, `^[0-9a-f]{16}$`, r.SpanID)
	assert.Empty(t, r.ParentSpanID)
	assert.Equal(t, r.TraceID, k.TraceID)
	assert.Equal(t, r.SpanID, k.ParentSpanID)
	assert.Equal(t, 2, r.Kind)
	assert.Equal(t, 3, k.Kind)
	assert.Equal(t, 2, k.Status.Code)
	assert.Equal(t, "boom", k.Status.Message)
	assert.Equal(t, 0, r.Status.Code)
	var n, xs otlp.Value
	for _, a := range k.Attributes {
		switch a.Key {
		case "n":
			n = a.Value
		case "xs":
			xs = a.Value
		}
	}
	require.NotNil(t, n.Int)
	assert.Equal(t, "7", *n.Int)
	require.NotNil(t, xs.Array)
	assert.Equal(t, "a", *xs.Array.Values[0].String)
	res := c.Exports[0].ResourceSpans[0].Resource.Attributes
	assert.Contains(t, res, otlp.KeyValue{Key: "service.name", Value: otlp.Value{String: ptr("conversations")}})
}

func ptr(s string) *string { return &s }

// A hop continues the trace its payload names; an HTTP request begins one
// and links the client's traceparent; an SQS message continues its
// attribute's, an EventBridge event its detail's.
func TestTheDoorContinuesAHopsTraceAndOnlyLinksAClients(t *testing.T) {
	p, _ := tracingtest.New(t, false)
	ctx := tracing.WithProvider(context.Background(), p)
	ctx, turn := tracing.StartRoot(ctx, "turn", trace.SpanKindServer, "", nil)
	tp := tracing.Traceparent(ctx)
	require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, tp)
	want := turn.SpanContext().TraceID()

	for name, payload := range map[string]string{
		"a Lambda payload":   `{"team_id":"t","trace":"` + tp + `"}`,
		"an EventBridge one": `{"detail-type":"X","detail":{"team_id":"t","trace":"` + tp + `"}}`,
		"an SQS message":     `{"Records":[{"eventSource":"aws:sqs","body":"{}","messageAttributes":{"traceparent":{"stringValue":"` + tp + `","dataType":"String"}}}]}`,
		"a rule's event on a queue": `{"Records":[{"eventSource":"aws:sqs","body":` +
			mustJSON(t, `{"detail-type":"X","detail":{"trace":"`+tp+`"}}`) + `}]}`,
	} {
		hctx, span := tracing.StartInvocation(tracing.WithProvider(context.Background(), p), "worker", []byte(payload))
		assert.Equal(t, want, span.SpanContext().TraceID(), name)
		assert.Equal(t, tracing.TraceID(hctx), want.String(), name)
		span.End()
	}

	theirs := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ev := `{"routeKey":"POST /v1/conversations","headers":{"Traceparent":"` + theirs + `"},"requestContext":{}}`
	_, span := tracing.StartInvocation(tracing.WithProvider(context.Background(), p), "conversations", []byte(ev))
	assert.NotEqual(t, "0af7651916cd43dd8448eb211c80319c", span.SpanContext().TraceID().String(), "a client's trace is never the parent")
	assert.True(t, span.SpanContext().TraceID().IsValid())
	span.End()

	_, fresh := tracing.StartInvocation(tracing.WithProvider(context.Background(), p), "sweeper", []byte(`{"source":"aws.scheduler"}`))
	assert.NotEqual(t, want, fresh.SpanContext().TraceID(), "no trace named: a new one")
}

func mustJSON(t *testing.T, s string) string {
	raw, err := json.Marshal(s)
	require.NoError(t, err)
	return string(raw)
}

// Inject names the span in a JSON object's trace field, the next hop's
// door reads it; without a span the object is left as it is.
func TestInjectNamesTheSpanForTheNextHop(t *testing.T) {
	assert.Equal(t, `{"a":1}`, string(tracing.Inject(context.Background(), []byte(`{"a":1}`))))
	p, _ := tracingtest.New(t, false)
	ctx, span := tracing.StartRoot(tracing.WithProvider(context.Background(), p), "x", trace.SpanKindServer, "", nil)
	defer span.End()
	var m map[string]any
	require.NoError(t, json.Unmarshal(tracing.Inject(ctx, []byte(`{"a":1,"trace":"old"}`)), &m))
	assert.Equal(t, tracing.Traceparent(ctx), m["trace"])
	assert.EqualValues(t, 1, m["a"])
	assert.Equal(t, `[1]`, string(tracing.Inject(ctx, []byte(`[1]`))), "not an object: as it was")
	// Without the field, it is spliced in first, the object otherwise
	// untouched; the door reads it from there.
	tp := tracing.Traceparent(ctx)
	assert.Equal(t, `{"trace":"`+tp+`","a":{"b":[1,2]}}`, string(tracing.Inject(ctx, []byte(`{"a":{"b":[1,2]}}`))))
	assert.Equal(t, `{"trace":"`+tp+`"}`, string(tracing.Inject(ctx, []byte(`{}`))))
	assert.JSONEq(t, `{"trace":"`+tp+`"}`, string(tracing.Inject(ctx, []byte(` { }`))))
	_, hop := tracing.StartInvocation(tracing.WithProvider(context.Background(), p), "gate", tracing.Inject(ctx, []byte(`{"agents":[{"slug":"kyra"}]}`)))
	assert.Equal(t, span.SpanContext().TraceID(), hop.SpanContext().TraceID())
	hop.End()
}

// A share of new traces is recorded; what is not recorded still has a
// trace id (the answer names it) and its hops follow the decision.
func TestSamplingDecidesAtTheRootAndHopsFollow(t *testing.T) {
	c := &tracingtest.Collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	p := otlp.NewProvider(tracing.Config{Service: "s", SamplePercent: 0}, otlp.New(srv.URL, "s", aws.Config{}))
	ctx, root := tracing.StartRoot(tracing.WithProvider(context.Background(), p), "root", trace.SpanKindServer, "", nil)
	assert.True(t, root.SpanContext().TraceID().IsValid())
	assert.False(t, root.SpanContext().IsSampled())
	tp := tracing.Traceparent(ctx)
	root.End()

	full := otlp.NewProvider(tracing.Config{Service: "t", SamplePercent: 100}, otlp.New(srv.URL, "t", aws.Config{}))
	_, hop := tracing.StartInvocation(tracing.WithProvider(context.Background(), full), "t", []byte(`{"trace":"`+tp+`"}`))
	assert.False(t, hop.SpanContext().IsSampled(), "the hop follows its parent's decision, whatever its own rate")
	hop.End()
	p.Flush(context.Background())
	full.Flush(context.Background())
	assert.Empty(t, c.Spans())
}

// Without a provider in the context nothing is recorded and nothing
// fails.
func TestNoProviderRecordsNothing(t *testing.T) {
	ctx, span := tracing.Start(context.Background(), "x", trace.SpanKindInternal)
	assert.False(t, span.IsRecording())
	assert.Empty(t, tracing.TraceID(ctx))
	assert.Empty(t, tracing.Traceparent(ctx))
	assert.False(t, tracing.Content(ctx))
}

// A failed span says what kind of error failed it; its text, which may
// quote what it failed on, only when the stage records content.
func TestAnErrorsTextIsContent(t *testing.T) {
	secret := errors.New("the provider refused: 'my private question'")
	for _, content := range []bool{false, true} {
		p, c := tracingtest.New(t, content)
		ctx, root := tracing.StartRoot(tracing.WithProvider(context.Background(), p), "root", trace.SpanKindServer, "", nil)
		tracing.End(ctx, root, fmt.Errorf("calling: %w", secret))
		p.Flush(context.Background())
		raw, err := json.Marshal(c.Exports)
		require.NoError(t, err)
		s := c.Spans()["root"]
		assert.Equal(t, 2, s.Status.Code, "failed either way")
		if content {
			assert.Contains(t, string(raw), "my private question")
		} else {
			assert.NotContains(t, string(raw), "my private question")
			assert.Equal(t, "*errors.errorString", s.Status.Message)
		}
	}
}
