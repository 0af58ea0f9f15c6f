package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// taskDirectory is messaging.Directory's read of a task, which the tasks'
// store serves.
type taskDirectory interface {
	TaskAgents(ctx context.Context, teamID, taskID string) ([]string, error)
}

// resultsRead: the results' store reads the work whose result it posts
// (a task, a session, a report) as their own stores wrote it.
func resultsRead(t *testing.T, f *fixture) {
	ctx := context.Background()
	tk := f.running(t, "ann")
	s := f.session(t, 0.5)
	r := f.report("status", "ann", "bob")
	require.NoError(t, f.Reports.CreateReport(ctx, r))
	gotTask, err := f.Results.GetTask(ctx, f.team, tk.ID)
	require.NoError(t, err)
	assert.Equal(t, []any{tk.ID, tasks.Running, "ann", tk.Version}, []any{gotTask.ID, gotTask.Status, gotTask.Assignee, gotTask.Version})
	gotSession, err := f.Results.GetSession(ctx, f.team, s.ID)
	require.NoError(t, err)
	assert.Equal(t, []any{s.ID, s.Lead, s.Goal, s.Status}, []any{gotSession.ID, gotSession.Lead, gotSession.Goal, gotSession.Status})
	gotReport, err := f.Results.GetReport(ctx, f.team, r.ID)
	require.NoError(t, err)
	assert.Equal(t, []any{r.ID, r.Title, r.To}, []any{gotReport.ID, gotReport.Title, gotReport.To})
	for _, read := range []func() error{
		func() error { _, err := f.Results.GetTask(ctx, f.otherTeam(), tk.ID); return err },
		func() error { _, err := f.Results.GetSession(ctx, f.otherTeam(), s.ID); return err },
		func() error { _, err := f.Results.GetReport(ctx, f.otherTeam(), r.ID); return err },
	} {
		refused(t, read(), apperr.ENOTFOUND, "")
	}
}

// taskResultReleased: a result a chat reply waits for is released to the
// conversation once, with the version moved on (so a writer that read the
// task before fails its condition); an ended task, or one not waited for,
// comes back as stored.
func taskResultReleased(t *testing.T, f *fixture) {
	ctx := context.Background()
	waited := another(f.running(t, "ann"))
	waited.ResultDelivery = tasks.DeliverInReply
	require.NoError(t, f.Tasks.CreateTask(ctx, waited, nil, nil))
	at := time.Now().UTC().Truncate(time.Millisecond)
	got, err := f.Tasks.ReleaseResult(ctx, f.team, waited.ID, at)
	require.NoError(t, err)
	assert.Equal(t, tasks.DeliverToConversation, got.ResultDelivery)
	assert.Equal(t, waited.Version+1, got.Version)
	stored := f.get(t, waited.ID)
	assert.Equal(t, tasks.DeliverToConversation, stored.ResultDelivery)
	assert.True(t, stored.UpdatedAt.Equal(at))
	failedOn(t, f.Tasks.ApplyTask(ctx, change(waited, []tasks.Status{tasks.Running}, func(a *tasks.Task) { a.Title = "stale" })), tasks.ItemTask)
	again, err := f.Tasks.ReleaseResult(ctx, f.team, waited.ID, at.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, stored.Version, again.Version, "released once")

	ended := f.running(t, "bob")
	ended.ResultDelivery = tasks.DeliverInReply
	require.NoError(t, f.Tasks.ApplyTask(ctx, change(ended, []tasks.Status{tasks.Running}, func(a *tasks.Task) { a.Status = tasks.Completed })))
	done := f.get(t, ended.ID)
	got, err = f.Tasks.ReleaseResult(ctx, f.team, ended.ID, at)
	require.NoError(t, err)
	assert.Equal(t, tasks.DeliverInReply, got.ResultDelivery, "an ended task's result is delivered in its reply")
	assert.Equal(t, done.Version, got.Version)
	_, err = f.Tasks.ReleaseResult(ctx, f.team, ids.New("task"), at)
	refused(t, err, apperr.ENOTFOUND, "")
}

// taskAgentsRead: the agents of a task, for the messages about it: its
// assignee, its delegation chain and the agent that created it.
func taskAgentsRead(t *testing.T, f *fixture) {
	ctx := context.Background()
	dir, ok := f.Tasks.(taskDirectory)
	require.True(t, ok, "the tasks' store tells who works on a task (messaging.Directory)")
	parent := f.running(t, "ann")
	child := f.child(t, parent, "bob")
	who, err := dir.TaskAgents(ctx, f.team, child.ID)
	require.NoError(t, err)
	assert.ElementsMatch(t, child.Agents(), who)
	assert.Contains(t, who, "ann")
	assert.Contains(t, who, "bob")
	_, err = dir.TaskAgents(ctx, f.otherTeam(), child.ID)
	refused(t, err, apperr.ENOTFOUND, "")
}

// dueEntryDropped: a due entry dropped (the sweep found it stale) is out
// of the index until a write of the task changes its status or due date;
// dropping an entry that is not there is no error.
func dueEntryDropped(t *testing.T, f *fixture) {
	ctx := context.Background()
	base := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC) // after any sweep of a running system
	tk := f.dueTask(t, base.Add(-time.Hour))
	require.Equal(t, []string{tk.ID}, f.overdueOf(t, base))
	ref := tasks.Ref{TeamID: f.team, ID: tk.ID}
	require.NoError(t, f.Tasks.DropDueEntry(ctx, ref))
	assert.Empty(t, f.overdueOf(t, base), "dropped")
	require.NoError(t, f.Tasks.DropDueEntry(ctx, ref), "dropped twice")
	require.NoError(t, f.Tasks.ApplyTask(ctx, change(tk, []tasks.Status{tasks.Queued}, func(a *tasks.Task) { a.Title = "renamed" })))
	assert.Empty(t, f.overdueOf(t, base), "a write that keeps its status and due date keeps it out")
	cur := f.get(t, tk.ID)
	require.NoError(t, f.Tasks.ApplyTask(ctx, change(cur, []tasks.Status{tasks.Queued}, func(a *tasks.Task) { a.Status = tasks.Running })))
	assert.Equal(t, []string{tk.ID}, f.overdueOf(t, base), "a status change puts it back")
	for _, r := range []tasks.Ref{{TeamID: f.team, ID: f.queued(t, "bob").ID}, {TeamID: f.team, ID: ids.New("task")}} {
		assert.NoError(t, f.Tasks.DropDueEntry(ctx, r), "no entry to drop")
	}
}
