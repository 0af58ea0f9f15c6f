//go:build integration

package cloud_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	conclaveevents "github.com/conclave-ai/conclave/events"
	"github.com/conclave-ai/conclave/shared/platform/streams"
)

// streamTypes reads a stream of the team from the table, as the streaming
// API does (shared/store/dynamo, streamlog.go), and holds it to its contract:
// numbered 1, 2, 3 … without a gap, every detail valid against its
// schema. It returns the events' types in order.
func streamTypes(t *testing.T, e env, teamID, stream string) []string {
	t.Helper()
	ctx := context.Background()
	evs, err := e.db.core.StreamEvents(ctx, teamID, stream, 0, 1000)
	require.NoError(t, err)
	head, err := e.db.core.StreamHead(ctx, teamID, stream)
	require.NoError(t, err)
	assert.Equal(t, int64(len(evs)), head, "%s: the head is the last of 1 … n", stream)
	var types []string
	for i, ev := range evs {
		assert.Equal(t, int64(i+1), ev.Seq, "%s: numbered without a gap", stream)
		assert.NoError(t, conclaveevents.Validate(ev.Type, ev.Detail), "%s #%d %s: %s", stream, ev.Seq, ev.Type, ev.Detail)
		types = append(types, ev.Type)
	}
	return types
}

// waitStreamType waits until the team's stream holds an event of type dt
// (a result is posted by the result-poster, after the work's end).
func waitStreamType(t *testing.T, e env, teamID, stream, dt string, within time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		types := streamTypes(t, e, teamID, stream)
		if slices.Contains(types, dt) || time.Now().After(deadline) {
			assert.Contains(t, types, dt, stream)
			return types
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// The streams of a session, a plan and a conversation as the deployed
// functions write them: what the API would stream, in order, numbered,
// each valid; another team reads none of them.
func assertRunStreams(t *testing.T, e env, teamID, conv, session, planConv, plan string) {
	t.Helper()
	types := streamTypes(t, e, teamID, streams.Session(session))
	require.NotEmpty(t, types)
	assert.Equal(t, "SessionStatusChanged", types[0], "the session's creation (planning) opens its stream")
	assert.Contains(t, types, "SessionStageCompleted")
	assert.Equal(t, "SessionStatusChanged", types[len(types)-1], "its end closes it")

	types = streamTypes(t, e, teamID, streams.Plan(plan))
	require.NotEmpty(t, types)
	assert.Equal(t, "PlanStarted", types[0])
	assert.Contains(t, types, "PlanStepCompleted")
	assert.Equal(t, "PlanCompleted", types[len(types)-1])

	types = streamTypes(t, e, teamID, streams.Conversation(conv))
	assert.Contains(t, types, "MessagePosted", "every message of the conversation")
	waitStreamType(t, e, teamID, streams.Conversation(planConv), "ResultPosted", 30*time.Second)

	other := "team_other_" + teamID
	for _, s := range []string{streams.Session(session), streams.Plan(plan), streams.Conversation(conv)} {
		evs, err := e.db.core.StreamEvents(context.Background(), other, s, 0, 100)
		require.NoError(t, err)
		assert.Empty(t, evs, "another team reads nothing of %s", s)
	}
}
