package consultations_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/work/consultations"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// noModel fails the test if the specialist is asked within the request.
type noModel struct{ t *testing.T }

func (m noModel) Converse(context.Context, models.Request) (models.Response, error) {
	m.t.Error("the specialist was asked within the request")
	return models.Response{}, errors.New("no model")
}

// asyncFixture is the service whose specialists answer in tasks of the
// in-memory store's task service.
func asyncFixture(t *testing.T) (*consultations.Service, *tasks.Service) {
	t.Helper()
	svc, store, bus := fixture(t)
	ts := tasks.NewService(store, nil, bus, slog.New(slog.NewTextHandler(io.Discard, nil)))
	svc.Specialists, svc.Model = ts, noModel{t}
	return svc, ts
}

func asyncAsk(q string) consultations.RequestInput {
	in := ask("frontend", q)
	in.Async, in.Creator = true, tasks.Creator{Type: "agent", ID: "frontend"}
	return in
}

// An asynchronous consultation returns pending with its specialist's task
// (no model call within the request); the task's answer completes it and
// gives the slot back; its tokens and cost are the task's.
func TestAnAsynchronousConsultationIsAnsweredByTheSpecialistsTask(t *testing.T) {
	svc, ts := asyncFixture(t)
	ctx := context.Background()
	c, err := svc.Request(ctx, team, asyncAsk("What fields does the user model have in the API?"))
	require.NoError(t, err)
	assert.Equal(t, consultations.Pending, c.Status)
	require.NotEmpty(t, c.TaskID)
	assert.Empty(t, c.Exchanges)
	task, err := ts.Get(ctx, team, c.TaskID)
	require.NoError(t, err)
	assert.Equal(t, c.ID, task.ConsultationID)
	assert.Equal(t, c.ConsultedAgent, task.Assignee)
	assert.Equal(t, c.Question, task.Instructions)
	assert.Contains(t, task.Context, "context package")
	assert.Contains(t, task.ExpectedOutput, `"answer"`)

	_, err = ts.Start(ctx, team, task.ID, "u")
	require.NoError(t, err)
	_, err = ts.Complete(ctx, team, task.ID, "u", `{"answer": "id, username, email", "suggested_next_steps": ["render them"]}`, nil)
	require.NoError(t, err)
	done, err := svc.SyncTask(ctx, team, c.ID)
	require.NoError(t, err)
	assert.Equal(t, consultations.Completed, done.Status)
	assert.Equal(t, "id, username, email", done.Response.Answer)
	assert.Equal(t, []string{"render them"}, done.SuggestedNextSteps)
	assert.Equal(t, consultations.ResolvedBySpecialist, done.ResolvedBy)
	require.Len(t, done.Exchanges, 1)
	held, err := svc.Store.ActiveConsultations(ctx, team, "frontend")
	require.NoError(t, err)
	assert.Empty(t, held, "the slot is given back")
}

// A failed specialist's task escalates the consultation (specialist_failed),
// giving the slot back and publishing ConsultationEscalated.
func TestAFailedSpecialistsTaskEscalates(t *testing.T) {
	svc, ts := asyncFixture(t)
	ctx := context.Background()
	c, err := svc.Request(ctx, team, asyncAsk("Is our JWT token authentication vulnerable?"))
	require.NoError(t, err)
	_, err = ts.Start(ctx, team, c.TaskID, "u")
	require.NoError(t, err)
	_, err = ts.Fail(ctx, team, c.TaskID, "u", "the model failed")
	require.NoError(t, err)
	esc, err := svc.SyncTask(ctx, team, c.ID)
	require.NoError(t, err)
	assert.Equal(t, consultations.Escalated, esc.Status)
	require.NotNil(t, esc.Loop)
	assert.Equal(t, consultations.EscalSpecialistError, esc.Loop.Type)
	assert.Equal(t, c.TaskID, esc.Loop.Evidence["task_id"])
	held, err := svc.Store.ActiveConsultations(ctx, team, "frontend")
	require.NoError(t, err)
	assert.Empty(t, held)
}

// A specialist's task the task service refuses (here: the parent task
// does not exist) escalates the consultation at once, with no slot held.
func TestARefusedSpecialistsTaskEscalates(t *testing.T) {
	svc, _ := asyncFixture(t)
	ctx := context.Background()
	in := asyncAsk("What fields does the user model have in the API?")
	in.ParentTaskID = "task_missing"
	c, err := svc.Request(ctx, team, in)
	require.NoError(t, err)
	assert.Equal(t, consultations.Escalated, c.Status)
	assert.Empty(t, c.TaskID)
	held, err := svc.Store.ActiveConsultations(ctx, team, "frontend")
	require.NoError(t, err)
	assert.Empty(t, held)
}
