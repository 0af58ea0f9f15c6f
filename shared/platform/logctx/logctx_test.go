package logctx_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/shared/testkit/logtest"
)

func TestLinesCarryTheContextsAttributes(t *testing.T) {
	var buf bytes.Buffer
	log := logctx.Wrap(slog.New(slog.NewJSONHandler(&buf, nil)).With("function", "tasks"))
	assert.Same(t, log, logctx.Wrap(log), "wrapping twice is a no-op")

	ctx := logctx.With(context.Background(), "request_id", "req-1")
	inner := logctx.With(ctx, "team_id", "team_a", "task_id", "tsk_1")
	log.InfoContext(inner, "transition", "to", "running")
	log.InfoContext(ctx, "outer")
	log.Info("no context")

	lines := logtest.Lines(t, &buf)
	require.Len(t, lines, 3)
	assert.Equal(t, map[string]any{"function": "tasks", "request_id": "req-1", "team_id": "team_a", "task_id": "tsk_1", "to": "running"},
		pick(lines[0], "function", "request_id", "team_id", "task_id", "to"))
	assert.Equal(t, "req-1", lines[1]["request_id"])
	assert.NotContains(t, lines[1], "task_id", "an inner context's attributes do not leak out")
	assert.NotContains(t, lines[2], "request_id")
}

func pick(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func TestBindCarriesTheAttributesOnce(t *testing.T) {
	var buf bytes.Buffer
	log := logctx.Wrap(slog.New(slog.NewJSONHandler(&buf, nil)))
	ctx := logctx.With(context.Background(), "team_id", "team_a")
	logctx.Bind(log, ctx).InfoContext(ctx, "bound")
	assert.Equal(t, 1, bytes.Count(buf.Bytes(), []byte(`"team_id"`)), buf.String())
}

// A key is written once: the line's own value over the context's, and the
// context's later value over its earlier one (slog's JSON handler would
// write both).
func TestEveryKeyIsWrittenOnce(t *testing.T) {
	var buf bytes.Buffer
	log := logctx.Wrap(slog.New(slog.NewJSONHandler(&buf, nil)))
	ctx := logctx.With(context.Background(), "team_id", "team_a", "session_id", "ses_1")
	ctx = logctx.With(ctx, "session_id", "ses_2")
	log.InfoContext(ctx, "line", "team_id", "team_a")
	raw := buf.String()
	assert.Equal(t, 1, strings.Count(raw, `"team_id"`), raw)
	assert.Equal(t, 1, strings.Count(raw, `"session_id"`), raw)
	line := logtest.Lines(t, &buf)[0]
	assert.Equal(t, "team_a", line["team_id"])
	assert.Equal(t, "ses_2", line["session_id"], "the later value")
}
