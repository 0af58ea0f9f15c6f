package cloud

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/awscalls"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// Each invocation gets its own counter and request id, is labelled from
// its payload and is served back from the invocation log.
func TestInvocationsAreCountedLabelledAndServed(t *testing.T) {
	var seen []*awscalls.Counter
	h := func(ctx context.Context, _ json.RawMessage) (string, error) {
		seen = append(seen, awscalls.FromContext(ctx))
		lc, ok := lambdacontext.FromContext(ctx)
		require.True(t, ok)
		assert.NotEmpty(t, lc.AwsRequestID)
		return "ok", nil
	}
	// Only what invoking and the diagnostics use: no AWS endpoint behind.
	e := &Edge{Resources: Resources{Names: manifest.Names{Stage: "t"}}, Handlers: map[string]any{"expert-gate": h, "message-fanout": h, "tasks": h},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	_, gate, err := e.invoke(context.Background(), "expert-gate", []byte(`{"team_id":"team_a","query":"q"}`))
	require.NoError(t, err)
	_, batch, err := e.invoke(context.Background(), "message-fanout", []byte(`{"Records":[{"body":"{\"detail\":{\"team_id\":\"team_b\"}}"},{"body":"{}"},{"body":"{\"detail\":{\"team_id\":\"team_d\"}}"}]}`))
	require.NoError(t, err)
	_, api, err := e.invoke(context.Background(), "tasks", []byte(`{"routeKey":"GET /v1/tasks","requestContext":{"authorizer":{"lambda":{"team_id":"team_c"}}}}`))
	require.NoError(t, err)
	require.Len(t, seen, 3)
	assert.NotSame(t, seen[0], seen[1])
	assert.Equal(t, "team_a", gate.TeamID)
	assert.Equal(t, "team_b", batch.TeamID)
	assert.Equal(t, 3, batch.Records)
	assert.Equal(t, []string{"team_b", "team_d"}, batch.Teams, "a batch is every team's of its events")
	assert.Equal(t, "team_c", api.TeamID)
	assert.Equal(t, "GET /v1/tasks", api.Route)
	assert.Less(t, gate.Seq, batch.Seq)

	get := func(q string) (out struct {
		LastSeq     int64        `json:"last_seq"`
		Invocations []Invocation `json:"invocations"`
	}) {
		w := httptest.NewRecorder()
		e.AWSHandler().ServeHTTP(w, httptest.NewRequest("GET", InvocationsPath+q, nil))
		require.Equal(t, 200, w.Code, w.Body.String())
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out))
		return out
	}
	none := get("")
	assert.Equal(t, api.Seq, none.LastSeq)
	assert.Empty(t, none.Invocations, "without since, only the last seq")
	assert.Len(t, get("?since=0").Invocations, 3)
	assert.Len(t, get("?since=0&team=team_b").Invocations, 1)
	assert.Len(t, get("?since=0&team=team_d").Invocations, 1, "a team found in a batch whose first event is another's")
	assert.Len(t, get("?since=0&function=expert-gate").Invocations, 1)
	assert.Len(t, get("?since="+itoa(gate.Seq)).Invocations, 2)
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestTheInvocationLogKeepsTheLatest(t *testing.T) {
	var l invocationLog
	for range invocationLogSize + 10 {
		l.add(Invocation{Function: "f"})
	}
	list, last := l.since(0, func(Invocation) bool { return true })
	assert.Equal(t, int64(invocationLogSize+10), last)
	assert.LessOrEqual(t, len(list), invocationLogSize)
	assert.Equal(t, last, list[len(list)-1].Seq)
}
