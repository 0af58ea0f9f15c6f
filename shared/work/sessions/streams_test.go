package sessions_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/events"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

func (f *fixture) stream(tb testing.TB, id string) []streams.Event {
	tb.Helper()
	evs, err := f.store.StreamEvents(context.Background(), team, streams.Session(id), 0, 1000)
	require.NoError(tb, err)
	for i, ev := range evs {
		require.Equal(tb, int64(i+1), ev.Seq)
		require.NoError(tb, events.Validate(ev.Type, ev.Detail), "%s %s", ev.Type, ev.Detail)
	}
	return evs
}

// A session run from start to end: its stream is what it announced on
// the bus, in order, detail for detail: the create's status (planning),
// each stage it stored and each status it reached.
func TestASessionsStreamIsWhatItAnnounces(t *testing.T) {
	f := newFixture(t)
	s := brainstorm(f, t, nil)
	got := f.drive(t, s)
	require.Equal(t, sessions.Completed, got.Status)

	evs := f.stream(t, s.ID)
	var announced []streams.Event
	for _, ev := range f.bus.Events() {
		if ev.DetailType != sessions.EventStatusChanged && ev.DetailType != sessions.EventStageCompleted {
			continue
		}
		raw, err := json.Marshal(ev.Detail)
		require.NoError(t, err)
		announced = append(announced, streams.Event{Type: ev.DetailType, Detail: raw})
	}
	require.Len(t, evs, len(announced))
	for i := range evs {
		assert.Equal(t, announced[i].Type, evs[i].Type, "event %d", i+1)
		assert.JSONEq(t, string(announced[i].Detail), string(evs[i].Detail), "event %d", i+1)
	}
	stages := 0
	for _, ev := range evs {
		if ev.Type == sessions.EventStageCompleted {
			stages++
		}
	}
	assert.Equal(t, len(got.StageOutputs), stages, "one event per stored stage")
	assert.Equal(t, int64(len(evs)), got.EventSeq)
	var first, last sessions.SessionStatusChanged
	require.NoError(t, json.Unmarshal(evs[0].Detail, &first))
	require.NoError(t, json.Unmarshal(evs[len(evs)-1].Detail, &last))
	assert.Equal(t, sessions.Planning, first.Status, "the create opens the stream")
	assert.Equal(t, sessions.Completed, last.Status)
}

// A session's approval is its status: the wait for a human is the
// SessionStatusChanged to awaiting_approval on its stream (no approval
// record is written with a session's change), and the decision the next
// status.
func TestASessionsApprovalWaitIsOnItsStream(t *testing.T) {
	f := newFixture(t)
	s := brainstorm(f, t, nil)
	_, err := f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	require.NoError(t, err)
	in := workflow.SessionStepInput{Machine: string(s.Pattern), Action: workflow.SessionAwait, TeamID: team, SessionID: s.ID, Run: 1,
		ExecutionARN: "arn:" + s.ID, TaskToken: "token"}
	_, err = f.svc.Step(context.Background(), in)
	require.NoError(t, err)
	_, err = f.svc.Step(context.Background(), in)
	require.NoError(t, err, "a retried await changes nothing")

	var statuses []sessions.Status
	for _, ev := range f.stream(t, s.ID) {
		require.Equal(t, sessions.EventStatusChanged, ev.Type)
		var d sessions.SessionStatusChanged
		require.NoError(t, json.Unmarshal(ev.Detail, &d))
		statuses = append(statuses, d.Status)
	}
	assert.Equal(t, []sessions.Status{sessions.Planning, sessions.Active, sessions.AwaitingApproval}, statuses)
}

// WithEvents derives a change's events from the session before and
// after it: one per stage output it adds, then its status change, each
// detail the bus gets, numbered after the last; nothing else is an event.
func TestWithEventsDerivesTheChangesEvents(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	base := sessions.Session{TeamID: team, ID: "ses_1", Pattern: sessions.Pipeline, Lead: "kyra", Status: sessions.Active, Version: 4, EventSeq: 7,
		TotalCostUSD: 0.25, Rounds: 1, ConversationID: "conv_1", StageOutputs: []sessions.StageOutput{{Key: "stage:1", Stage: 1, Kind: "stage", Agent: "luke"}}}
	out2 := sessions.StageOutput{Key: "stage:2", Stage: 2, Round: 1, Kind: "stage", Agent: "archie", TaskID: "task_2", Tokens: 12, CostUSD: 0.01, DurationSeconds: 2}
	cases := []struct {
		name   string
		change func(*sessions.Session)
		want   []any
	}{
		{"nothing the stream tells", func(s *sessions.Session) { s.CurrentStage, s.Tokens = "stage:2", 99 }, nil},
		{"a status", func(s *sessions.Session) { s.Status, s.StatusReason = sessions.Failed, "model_failed" }, []any{
			sessions.SessionStatusChanged{TeamID: team, SessionID: "ses_1", Pattern: sessions.Pipeline, Lead: "kyra", Status: sessions.Failed,
				PreviousStatus: sessions.Active, Reason: "model_failed", TotalCostUSD: 0.25, Rounds: 1, ConversationID: "conv_1"}}},
		{"a stage", func(s *sessions.Session) { s.StageOutputs = append(s.StageOutputs, out2) }, []any{
			sessions.SessionStageCompleted{TeamID: team, SessionID: "ses_1", Pattern: sessions.Pipeline, Stage: 2, Round: 1, Kind: "stage",
				Agent: "archie", TaskID: "task_2", Tokens: 12, CostUSD: 0.01, DurationSeconds: 2}}},
		{"a stage, then the status it led to", func(s *sessions.Session) {
			s.StageOutputs = append(s.StageOutputs, out2)
			s.Status = sessions.Synthesizing
		}, []any{
			sessions.SessionStageCompleted{TeamID: team, SessionID: "ses_1", Pattern: sessions.Pipeline, Stage: 2, Round: 1, Kind: "stage",
				Agent: "archie", TaskID: "task_2", Tokens: 12, CostUSD: 0.01, DurationSeconds: 2},
			sessions.SessionStatusChanged{TeamID: team, SessionID: "ses_1", Pattern: sessions.Pipeline, Lead: "kyra", Status: sessions.Synthesizing,
				PreviousStatus: sessions.Active, TotalCostUSD: 0.25, Rounds: 1, ConversationID: "conv_1"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			after := base
			after.StageOutputs = append([]sessions.StageOutput(nil), base.StageOutputs...)
			after.Events = []streams.Event{{Seq: 99, Type: "stale"}} // a copy's leftovers are replaced
			c.change(&after)
			require.NoError(t, sessions.WithEvents(base, &after, at))
			require.Len(t, after.Events, len(c.want))
			assert.Equal(t, base.EventSeq+int64(len(c.want)), after.EventSeq)
			for i, w := range c.want {
				ev := after.Events[i]
				assert.Equal(t, base.EventSeq+int64(i)+1, ev.Seq)
				assert.True(t, at.Equal(ev.At))
				want, err := json.Marshal(w)
				require.NoError(t, err)
				assert.JSONEq(t, string(want), string(ev.Detail))
				_, isStatus := w.(sessions.SessionStatusChanged)
				assert.Equal(t, map[bool]string{true: sessions.EventStatusChanged, false: sessions.EventStageCompleted}[isStatus], ev.Type)
			}
		})
	}

	created := base
	created.EventSeq, created.Status, created.StageOutputs = 0, sessions.Planning, nil
	require.NoError(t, sessions.WithEvents(sessions.Session{}, &created, at))
	require.Len(t, created.Events, 1, "a new session: its first status")
	assert.Equal(t, sessions.EventStatusChanged, created.Events[0].Type)
	assert.NotContains(t, string(created.Events[0].Detail), "previous_status", "a new session has none")
	assert.Equal(t, int64(1), created.EventSeq)
	assert.Equal(t, int64(1), created.Events[0].Seq)
}
