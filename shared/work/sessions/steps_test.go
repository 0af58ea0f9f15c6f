package sessions_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// notes records what the participants were told.
type notes struct {
	mu     sync.Mutex
	bodies []string
}

func (n *notes) Notify(_ context.Context, _ sessions.Session, _, body string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.bodies = append(n.bodies, body)
	return nil
}

// clock is a settable time for the service.
func clock(f *fixture) *time.Time {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	f.svc.Now = func() time.Time { return now }
	return &now
}

// A stage past the deadline times out; completing or waiting for approval
// past it does not.
func TestAStagePastTheDeadlineTimesOut(t *testing.T) {
	f := newFixture(t)
	now := clock(f)
	s := brainstorm(f, t, func(in *sessions.CreateInput) { in.MaxDurationSeconds = ptr(60) })
	out, err := f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	require.NoError(t, err)
	*now = now.Add(60 * time.Second)
	_, err = f.step(s, workflow.SessionStage, out.Items[0])
	assert.True(t, errors.As(err, new(workflow.TaskTimedOut)), "%v", err)
	in := workflow.SessionStepInput{Machine: string(s.Pattern), Action: workflow.SessionAwait, TeamID: team, SessionID: s.ID, Run: 1,
		ExecutionARN: "arn:" + s.ID, TaskToken: "token"}
	_, err = f.svc.Step(context.Background(), in)
	require.NoError(t, err, "awaiting approval past the deadline")
	_, err = f.svc.Step(context.Background(), in)
	require.NoError(t, err, "a retried await, the session already awaiting approval")
	in.Action = workflow.SessionComplete
	_, err = f.svc.Step(context.Background(), in)
	require.NoError(t, err, "completing past the deadline")
}

// A state's timeout is the session's time left plus the margin when that
// is less than a task's budget.
func TestAStagesTimeoutIsTheSessionsTimeLeft(t *testing.T) {
	f := newFixture(t)
	now := clock(f)
	s := brainstorm(f, t, func(in *sessions.CreateInput) { in.MaxDurationSeconds = ptr(60) })
	out, err := f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	require.NoError(t, err)
	*now = now.Add(20 * time.Second)
	out, err = f.step(s, workflow.SessionStage, out.Items[0])
	require.NoError(t, err)
	assert.Equal(t, 40+15, out.SecondsLeft)
}

// Begin, retried by the same execution, succeeds again and keeps the first
// start; another execution cannot begin a running session.
func TestARetriedBeginKeepsTheSession(t *testing.T) {
	f := newFixture(t)
	now := clock(f)
	start := *now
	s := brainstorm(f, t, nil)
	_, err := f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	require.NoError(t, err)
	*now = now.Add(time.Minute)
	_, err = f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	require.NoError(t, err)
	other := workflow.SessionStepInput{Machine: string(s.Pattern), Action: workflow.SessionBegin, TeamID: team, SessionID: s.ID, Run: 1, ExecutionARN: "arn:other"}
	_, err = f.svc.Step(context.Background(), other)
	assert.Error(t, err)
	got, err := f.svc.Get(context.Background(), team, s.ID)
	require.NoError(t, err)
	require.NotNil(t, got.StartedAt)
	assert.Equal(t, start, got.StartedAt.UTC())
	assert.Equal(t, "arn:"+s.ID, got.ExecutionARN)
}

// The machine's failure ends the session with the Lambda error's message,
// or the raw cause, or the error's name when there is no cause.
func TestAFailureEndsTheSessionWithItsCause(t *testing.T) {
	for _, c := range []struct{ name, cause, want string }{
		{"Boom", `{"errorMessage":"the disk is full","errorType":"x"}`, "the disk is full"},
		{"Boom", "plain words", "plain words"},
		{"Boom", "", "Boom"},
	} {
		f := newFixture(t)
		s := brainstorm(f, t, nil)
		_, err := f.step(s, workflow.SessionBegin, workflow.SessionItem{})
		require.NoError(t, err)
		out, err := f.svc.Step(context.Background(), workflow.SessionStepInput{Machine: string(s.Pattern), Action: workflow.SessionFail, TeamID: team,
			SessionID: s.ID, Run: 1, ExecutionARN: "arn:" + s.ID, Error: workflow.StepError{Error: c.name, Cause: c.cause}})
		require.NoError(t, err)
		assert.Equal(t, string(sessions.Failed), out.Status)
		got, err := f.svc.Get(context.Background(), team, s.ID)
		require.NoError(t, err)
		assert.Equal(t, c.want, got.Convergence, c.cause)
	}
}

// A human's approval is recorded in the convergence, and the participants
// are told the session ended.
func TestAnApprovalIsRecordedAndAnnounced(t *testing.T) {
	f := newFixture(t)
	n := &notes{}
	f.svc.Notifier = n
	s := brainstorm(f, t, nil)
	_, err := f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	require.NoError(t, err)
	in := workflow.SessionStepInput{Machine: string(s.Pattern), Action: workflow.SessionAwait, TeamID: team, SessionID: s.ID, Run: 1,
		ExecutionARN: "arn:" + s.ID, TaskToken: "token"}
	_, err = f.svc.Step(context.Background(), in)
	require.NoError(t, err)
	in.Action, in.Decision = workflow.SessionComplete, []byte(`{"decision":"approve","by":"ana"}`)
	_, err = f.svc.Step(context.Background(), in)
	require.NoError(t, err)
	got, err := f.svc.Get(context.Background(), team, s.ID)
	require.NoError(t, err)
	assert.Equal(t, sessions.Completed, got.Status)
	assert.Contains(t, got.Convergence, "; approved by ana")
	assert.Contains(t, n.bodies, "the final output waits for a human's approval")
	assert.Contains(t, n.bodies, "the session ended completed")
}

// The console link names the execution's region, us-east-1 when none.
func TestConsoleURLNamesTheRegion(t *testing.T) {
	assert.Contains(t, sessions.ConsoleURL("eu-west-1", "arn:x"), "https://eu-west-1.console")
	assert.Contains(t, sessions.ConsoleURL("", "arn:x"), "https://us-east-1.console")
}

// Listing by an agent that is no slug is refused naming the field.
func TestListRefusesAnAgentThatIsNoSlug(t *testing.T) {
	f := newFixture(t)
	_, _, err := f.svc.List(context.Background(), team, sessions.Filter{Agent: "Not a slug!"}, paging.Page{})
	assert.True(t, apperr.Is(err, apperr.EINVALID), "%v", err)
}

// The trace's duration runs from the start to now, then to the end; its
// outcome is pending until the session has one.
func TestTraceTimesTheSession(t *testing.T) {
	f := newFixture(t)
	now := clock(f)
	start := *now
	s := brainstorm(f, t, nil)
	tr, err := f.svc.Trace(context.Background(), team, s.ID)
	require.NoError(t, err)
	assert.Zero(t, tr.DurationMs, "not started")
	assert.Equal(t, sessions.OutcomePending, tr.Outcome)
	_, err = f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	require.NoError(t, err)
	*now = start.Add(3 * time.Second)
	tr, err = f.svc.Trace(context.Background(), team, s.ID)
	require.NoError(t, err)
	assert.Equal(t, int64(3000), tr.DurationMs)
	*now = start.Add(5 * time.Second)
	_, err = f.step(s, workflow.SessionComplete, workflow.SessionItem{})
	require.NoError(t, err)
	*now = start.Add(time.Minute)
	tr, err = f.svc.Trace(context.Background(), team, s.ID)
	require.NoError(t, err)
	assert.Equal(t, int64(5000), tr.DurationMs)
	assert.Equal(t, sessions.OutcomeCompleted, tr.Outcome)
}
