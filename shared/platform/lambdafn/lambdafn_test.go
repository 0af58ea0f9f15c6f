package lambdafn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	io2 "io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/awscalls"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
)

func logLine(t *testing.T, buf *bytes.Buffer) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &m), buf.String())
	return m
}

// Every invocation gets its own counter and ends with one log line naming
// its request and its AWS calls.
func TestCountedLogsOneLinePerInvocation(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil)).With("function", "probe")
	var seen []*awscalls.Counter
	h := lambdafn.Counted(func(ctx context.Context, in map[string]string) (map[string]string, error) {
		seen = append(seen, awscalls.FromContext(ctx))
		if in["fail"] != "" {
			return nil, errors.New("boom")
		}
		return map[string]string{"ok": "yes"}, nil
	}, log)

	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	out, err := h.Invoke(ctx, []byte(`{}`))
	require.NoError(t, err)
	assert.JSONEq(t, `{"ok":"yes"}`, string(out))
	line := logLine(t, &buf)
	assert.Equal(t, "invocation", line["msg"])
	assert.Equal(t, "probe", line["function"])
	assert.Equal(t, "req-1", line["lambda_request_id"])
	assert.Equal(t, map[string]any{}, line["aws_calls"])
	assert.Equal(t, float64(0), line["aws_calls_total"])

	buf.Reset()
	_, err = h.Invoke(context.Background(), []byte(`{"fail":"x"}`))
	require.Error(t, err)
	assert.Equal(t, "boom", logLine(t, &buf)["error"])
	require.Len(t, seen, 2)
	require.NotNil(t, seen[0])
	assert.NotSame(t, seen[0], seen[1], "each invocation has its own counter")
}

// The local edge makes the counter itself, to read it back: the wrapper
// uses it.
func TestCountedUsesTheCallersCounter(t *testing.T) {
	var got *awscalls.Counter
	h := lambdafn.Counted(func(ctx context.Context) error { got = awscalls.FromContext(ctx); return nil },
		slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)))
	ctx, c := awscalls.NewContext(context.Background())
	_, err := h.Invoke(ctx, []byte(`null`))
	require.NoError(t, err)
	assert.Same(t, c, got)
}

// Invocations of one handler at once (the local edge runs them in one
// process) each get their own answer: aws-lambda-go's handler answers with
// a pooled buffer it reuses as soon as Invoke returns, which made two
// concurrent answers overwrite each other (a corrupt response, the
// gateway's bare 500).
func TestConcurrentInvocationsKeepTheirOwnAnswers(t *testing.T) {
	type echo struct {
		N   int    `json:"n"`
		Pad string `json:"pad"`
	}
	h := lambdafn.Counted(func(_ context.Context, in echo) (echo, error) {
		return echo{N: in.N, Pad: strings.Repeat("x", 4096+in.N)}, nil
	}, slog.New(slog.NewTextHandler(io2.Discard, nil)))
	var wg sync.WaitGroup
	var bad atomic.Int32
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				n := g*1000 + i
				out, err := h.Invoke(context.Background(), []byte(fmt.Sprintf(`{"n":%d}`, n)))
				var got echo
				if err != nil || json.Unmarshal(out, &got) != nil || got.N != n || len(got.Pad) != 4096+n {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, bad.Load(), "answers mixed up between concurrent invocations")
}
