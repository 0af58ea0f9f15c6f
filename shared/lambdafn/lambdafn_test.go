package lambdafn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/awscalls"
	"github.com/conclave-ai/conclave/shared/lambdafn"
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
