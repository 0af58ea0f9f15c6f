package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/work/consultations"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// dueTask is a board task of ann's due at at.
func (f *fixture) dueTask(t *testing.T, at time.Time) tasks.Task {
	t.Helper()
	tk, err := f.tasks.Create(context.Background(), f.team, user, tasks.CreateInput{Assignee: "ann", Title: "due work", DueAt: &at}, false)
	require.NoError(t, err)
	return tk
}

// overdueOf is the team's tasks among the due entries before before.
func (f *fixture) overdueOf(t *testing.T, before time.Time) []string {
	t.Helper()
	refs, err := f.Tasks.OverdueTasks(context.Background(), before, 1000)
	require.NoError(t, err)
	var ours []string
	for _, r := range refs {
		if r.TeamID == f.team {
			ours = append(ours, r.ID)
		}
	}
	return ours
}

// Due entries: the tasks with a due date before the time asked that have
// not ended and are not flagged; the flag and the escalation listed beside
// the consultations' are writes of the task's, its resolution conditioned
// on the listing still open. The dates are in 2100, so no sweep of the
// running system (the table may be shared) flags these tasks, and the
// flag is written here as the service writes it (one change), not by a
// sweep, which would flag every team's tasks due before then.
func taskDue(t *testing.T, f *fixture) {
	ctx := context.Background()
	base := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	past := f.dueTask(t, base.Add(-time.Hour))
	later := f.dueTask(t, base.Add(time.Hour))
	ended := f.dueTask(t, base.Add(-2*time.Hour))
	f.queued(t, "ann") // no due date
	_, err := f.tasks.Cancel(ctx, f.team, ended.ID, "user:key_contract", "not needed")
	require.NoError(t, err)
	assert.Equal(t, []string{past.ID}, f.overdueOf(t, base), "due before then, not ended, not the later one")
	assert.ElementsMatch(t, []string{past.ID, later.ID}, f.overdueOf(t, base.Add(2*time.Hour)))

	p, err := f.Tasks.GetBoardPolicy(ctx, f.team)
	require.NoError(t, err)
	assert.False(t, p.EscalateOverdue, "no policy: the default")
	require.NoError(t, f.Tasks.PutBoardPolicy(ctx, f.team, tasks.BoardPolicy{EscalateOverdue: true, UpdatedAt: &base}))
	p, err = f.Tasks.GetBoardPolicy(ctx, f.team)
	require.NoError(t, err)
	assert.True(t, p.EscalateOverdue)

	now := time.Now().UTC()
	require.NoError(t, f.Tasks.ApplyTask(ctx, change(past, []tasks.Status{tasks.Queued}, func(a *tasks.Task) {
		a.OverdueAt = &now
		a.Escalation = &tasks.Escalation{ID: ids.New("esc"), Status: tasks.EscalationOpen, CreatedAt: now}
	})))
	flagged, err := f.Tasks.GetTask(ctx, f.team, past.ID)
	require.NoError(t, err)
	require.NotNil(t, flagged.OverdueAt)
	require.NotNil(t, flagged.Escalation)
	assert.Empty(t, f.overdueOf(t, base), "flagged: out of the entries")

	e, err := f.Consultations.GetEscalation(ctx, f.team, flagged.Escalation.ID)
	require.NoError(t, err)
	assert.Equal(t, tasks.EscalationTypeOverdue, e.Type)
	assert.Equal(t, past.ID, e.TaskID)
	assert.Equal(t, consultations.EscalationOpen, e.Status)
	open, _, err := f.Consultations.ListEscalations(ctx, f.team, consultations.EscalationOpen, paging.Page{Limit: 10})
	require.NoError(t, err)
	require.Len(t, open, 1)
	assert.Equal(t, e.ID, open[0].ID)

	resolved, err := f.tasks.ResolveEscalation(ctx, f.team, past.ID, tasks.EscalationResolution{EscalationID: e.ID, Note: "drop it", Action: tasks.ResolveCancel, By: "ana"})
	require.NoError(t, err)
	assert.Equal(t, tasks.Canceled, resolved.Status)
	e, err = f.Consultations.GetEscalation(ctx, f.team, e.ID)
	require.NoError(t, err)
	assert.Equal(t, consultations.EscalationResolved, e.Status)
	assert.Equal(t, "drop it", e.Resolution)
	assert.Equal(t, tasks.ResolveCancel, e.Action)

	// A resolution written from a task read while the listing was open
	// fails on the listing, and writes nothing.
	stale := resolved
	esc := *resolved.Escalation
	esc.Status = tasks.EscalationOpen
	stale.Escalation = &esc
	err = f.Tasks.ApplyTask(ctx, change(stale, nil, func(a *tasks.Task) {
		again := *resolved.Escalation
		a.Escalation = &again
	}))
	failedOn(t, err, tasks.ItemEscalation)
	got, err := f.Tasks.GetTask(ctx, f.team, past.ID)
	require.NoError(t, err)
	assert.Equal(t, resolved.Version, got.Version, "nothing written")
}
