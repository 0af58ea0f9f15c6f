package sessions_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// busyTasks is the task model with an agent at its limit: its stages are
// refused with begin's error, they wait in line, and releases are kept.
type busyTasks struct {
	sessions.TaskModel
	begin    error
	released []string
}

func (b *busyTasks) BeginStage(context.Context, string, sessions.StageTask) (string, error) {
	return "", b.begin
}

func (b *busyTasks) AwaitSlot(context.Context, string, string, string, string, time.Time) (bool, error) {
	return true, nil
}

func (b *busyTasks) ReleaseSlots(_ context.Context, _, prefix string) error {
	b.released = append(b.released, prefix)
	return nil
}

// A stage whose agent holds its five tasks waits for a slot (AgentBusy);
// any other refusal of the task model fails the stage as it is. A session
// cancelled while a stage waits gives its ticket back.
func TestAStageOfABusyAgentWaitsAndItsTicketIsReleased(t *testing.T) {
	f := newFixture(t)
	withStarter(f)
	b := &busyTasks{TaskModel: sessions.TaskModel{Svc: f.tasks}, begin: apperr.New(apperr.EINVALID, "no such thing")}
	f.svc.Tasks = b
	s := brainstorm(f, t, nil)
	out, err := f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	require.NoError(t, err)
	_, err = f.step(s, workflow.SessionStage, out.Items[0])
	require.Error(t, err)
	assert.False(t, errors.As(err, new(workflow.AgentBusy)), "%v", err)

	b.begin = apperr.New(apperr.ECONFLICT, "luke holds five tasks").WithReason(tasks.ReasonConcurrency)
	_, err = f.step(s, workflow.SessionStage, out.Items[0])
	var busy workflow.AgentBusy
	require.True(t, errors.As(err, &busy), "%v", err)
	_, err = f.svc.Step(context.Background(), workflow.SessionStepInput{Machine: string(s.Pattern), Action: workflow.SessionAwaitSlot, TeamID: team,
		SessionID: s.ID, Run: 1, ExecutionARN: "arn:" + s.ID, TaskToken: "token", Error: workflow.StepError{Error: "AgentBusy", Cause: busy.Msg}})
	require.NoError(t, err)
	got, err := f.svc.Get(context.Background(), team, s.ID)
	require.NoError(t, err)
	require.Len(t, got.SlotWaits, 1)
	assert.Empty(t, b.released)
	_, err = f.svc.Cancel(context.Background(), team, s.ID, "ana")
	require.NoError(t, err)
	assert.Len(t, b.released, 1)
}

// A resumed session runs again the stages that did not complete; the
// completed ones keep their status.
func TestResumeWaitsOnlyForTheStagesNotDone(t *testing.T) {
	f := newFixture(t)
	withStarter(f)
	f.script(t, "archie", "fail")
	s := f.create(t, sessions.CreateInput{Pattern: sessions.Pipeline, Lead: "kyra", Goal: "Review", Participants: parts("worker", "luke", "archie", "sage")})
	require.Equal(t, sessions.Failed, f.drive(t, s).Status)
	r, err := f.svc.Resume(context.Background(), team, s.ID)
	require.NoError(t, err)
	status := map[string]string{}
	for _, p := range r.Participants {
		status[p.Agent] = p.Status
	}
	assert.Equal(t, map[string]string{"luke": sessions.PartCompleted, "archie": sessions.PartWaiting, "sage": sessions.PartWaiting}, status)
}
