package sessions_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// On the task model, an agent's sixth stage is refused for its limit; in
// line for a slot, it runs on the slot handed to its ticket when one of
// the five ends.
func TestAStageRunsOnTheSlotHandedToItsTicket(t *testing.T) {
	f := newFixture(t)
	f.tasks.Callbacks = &starter{} // the slot is handed over only when the waiting state can be woken
	m := sessions.TaskModel{Svc: f.tasks}
	ctx := context.Background()
	stage := func(i int, ticket string) (string, error) {
		return m.BeginStage(ctx, team, sessions.StageTask{SessionID: fmt.Sprintf("ses_%d", i), Lead: "kyra", Agent: "luke",
			Title: "a stage", Prompt: "work", CapUSD: 0.5, Ticket: ticket})
	}
	var ids []string
	for i := range tasks.MaxActivePerAgent {
		id, err := stage(i, "")
		require.NoError(t, err)
		ids = append(ids, id)
	}
	_, err := stage(9, "")
	ae, ok := apperr.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, tasks.ReasonConcurrency, ae.Reason)

	waiting, err := m.AwaitSlot(ctx, team, "luke", "SLOT#ses_9#1#stage:1", "token", time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.True(t, waiting)
	require.NoError(t, m.EndStage(ctx, team, ids[0], "luke", "done", "", 10, 0.01))
	_, granted, err := f.tasks.GrantedTicket(ctx, team, "SLOT#ses_9#1#stage:1")
	require.NoError(t, err)
	require.True(t, granted, "the slot luke's first stage freed was handed to the ticket")
	_, err = stage(9, "SLOT#ses_9#1#stage:1")
	assert.NoError(t, err)
	_, granted, err = f.tasks.GrantedTicket(ctx, team, "SLOT#ses_9#1#stage:1")
	require.NoError(t, err)
	assert.False(t, granted, "the stage took the ticket's slot")
}

// startFails is a task store that cannot start a task.
type startFails struct{ *memstore.Store }

func (s startFails) ApplyTask(ctx context.Context, c tasks.Change) error {
	if c.After.Status == tasks.Running {
		return errors.New("the store is down")
	}
	return s.Store.ApplyTask(ctx, c)
}

// A stage whose task was created but could not start fails with the
// start's error.
func TestAStageWhoseTaskCannotStartFails(t *testing.T) {
	f := newFixture(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := sessions.TaskModel{Svc: tasks.NewService(startFails{f.store}, nil, f.bus, log)}
	id, err := m.BeginStage(context.Background(), team, sessions.StageTask{SessionID: "ses_1", Lead: "kyra", Agent: "luke",
		Title: "a stage", Prompt: "work", CapUSD: 0.5})
	assert.ErrorContains(t, err, "the store is down")
	assert.NotEmpty(t, id)
}
