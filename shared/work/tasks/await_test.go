package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// waitingParent is a running executed task of kyra's (execution arn:p)
// and an executed child of luke's it delegated, started (arn:c); nobody
// waits on the child yet. The service wakes through w.
func (f *fixture) waitingParent(t *testing.T, w *wakes) (parent, child tasks.Task) {
	t.Helper()
	f.svc.Workflows = &starter{}
	f.svc.Callbacks = w
	ctx := context.Background()
	parent = f.create(t, executing("kyra"))
	_, err := f.svc.ExecStart(ctx, team, parent.ID, "arn:p")
	require.NoError(t, err)
	yes := true
	child, err = f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", ParentID: parent.ID, Title: "help", Execute: &yes}, false)
	require.NoError(t, err)
	child, err = f.svc.ExecStart(ctx, team, child.ID, "arn:c")
	require.NoError(t, err)
	return parent, child
}

// A child that ends wakes its waiting parent's execution once, with the
// child's outcome; the end of a child nobody waits on wakes nobody.
func TestAChildsEndWakesItsWaitingParentWithItsOutcome(t *testing.T) {
	f := newFixture(t)
	w := &wakes{}
	parent, child := f.waitingParent(t, w)
	ctx := context.Background()
	require.NoError(t, f.svc.Await(ctx, team, parent.ID, "arn:p", child.ID, "token-c"))
	assert.Empty(t, w.woken(), "a running child wakes nobody yet")

	done, err := f.svc.ExecComplete(ctx, team, child.ID, "arn:c", workflow.TaskResult{Output: "the answer"})
	require.NoError(t, err)
	assert.Equal(t, tasks.Completed, done.Status)
	assert.Equal(t, "the answer", done.Result)
	require.Equal(t, []string{"token-c"}, w.woken())
	assert.Equal(t, workflow.ChildOutcome{TaskID: child.ID, Status: "completed", Assignee: "luke", Summary: "task " + child.ID + " by luke completed: the answer"}, w.output[0])

	// A second child ends without a waiter: no token is sent.
	yes := true
	other, err := f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "sage", ParentID: parent.ID, Title: "more", Execute: &yes}, false)
	require.NoError(t, err)
	_, err = f.svc.ExecStart(ctx, team, other.ID, "arn:o")
	require.NoError(t, err)
	_, err = f.svc.ExecComplete(ctx, team, other.ID, "arn:o", workflow.TaskResult{Output: "x"})
	require.NoError(t, err)
	assert.Len(t, w.woken(), 1)
}

// A wait registered on a child that already ended wakes the parent at
// once with the child's outcome (the end found no waiter to wake).
func TestAWaitOnAnEndedChildWakesAtOnce(t *testing.T) {
	f := newFixture(t)
	w := &wakes{}
	parent, child := f.waitingParent(t, w)
	ctx := context.Background()
	_, err := f.svc.ExecFail(ctx, team, child.ID, "arn:c", "Error", `{"errorMessage":"no luck"}`)
	require.NoError(t, err)
	assert.Empty(t, w.woken())

	require.NoError(t, f.svc.Await(ctx, team, parent.ID, "arn:p", child.ID, "token-late"))
	require.Equal(t, []string{"token-late"}, w.woken())
	out := w.output[0].(workflow.ChildOutcome)
	assert.Equal(t, "failed", out.Status)
	assert.Contains(t, out.Summary, "by luke ended failed: ")
}

// The parent must be running for the execution that waits, and the child
// must be its own.
func TestAwaitRefusesAnotherExecutionOrAnotherParentsChild(t *testing.T) {
	f := newFixture(t)
	w := &wakes{}
	parent, child := f.waitingParent(t, w)
	ctx := context.Background()
	assert.ErrorIs(t, f.svc.Await(ctx, team, parent.ID, "arn:other", child.ID, "t"), tasks.ErrNotRunnable)

	stranger := f.create(t, executing("sage"))
	_, err := f.svc.ExecStart(ctx, team, stranger.ID, "arn:s")
	require.NoError(t, err)
	err = f.svc.Await(ctx, team, stranger.ID, "arn:s", child.ID, "t")
	assert.Equal(t, apperr.EINVALID, apperr.Code(err), "the child was not delegated by this task")
	assert.Empty(t, f.get(t, child.ID).Waiter)

	_, err = f.svc.ExecComplete(ctx, team, parent.ID, "arn:p", workflow.TaskResult{Output: "done"})
	require.NoError(t, err)
	assert.ErrorIs(t, f.svc.Await(ctx, team, parent.ID, "arn:p", child.ID, "t"), tasks.ErrNotRunnable, "an ended parent waits for nothing")
	assert.Empty(t, w.woken())
}

// A send that keeps failing fails the wait's step (the machine retries it
// with a new token); a function without callbacks cannot wake and says so
// in its log, without failing.
func TestAWakeThatCannotBeSent(t *testing.T) {
	f := newFixture(t)
	w := &wakes{dead: map[string]bool{"token-dead": true}}
	parent, child := f.waitingParent(t, w)
	ctx := context.Background()
	_, err := f.svc.ExecComplete(ctx, team, child.ID, "arn:c", workflow.TaskResult{Output: "ok"})
	require.NoError(t, err)
	assert.Error(t, f.svc.Await(ctx, team, parent.ID, "arn:p", child.ID, "token-dead"))
	assert.Empty(t, w.woken())

	f.svc.Callbacks = nil
	assert.NoError(t, f.svc.Await(ctx, team, parent.ID, "arn:p", child.ID, "token-2"), "nothing to send it with")
}

func TestOutcomeSaysHowTheTaskStands(t *testing.T) {
	base := tasks.Task{ID: "tsk_1", Assignee: "luke", Result: "42", Error: "boom"}
	for st, want := range map[tasks.Status]string{
		tasks.Completed: "task tsk_1 by luke completed: 42",
		tasks.Failed:    "task tsk_1 by luke ended failed: boom",
		tasks.TimedOut:  "task tsk_1 by luke ended timed_out: boom",
		tasks.Canceled:  "task tsk_1 by luke ended canceled: boom",
		tasks.Running:   "task tsk_1 by luke is running",
		tasks.Blocked:   "task tsk_1 by luke is blocked",
	} {
		tk := base
		tk.Status = st
		assert.Equal(t, want, tk.Outcome(), st)
	}
}

// ExecComplete records the result for the execution the task runs for;
// another execution's, or a second completion, is not runnable.
func TestExecCompleteIsTheTasksOwnExecutionsOnly(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tk := f.create(t, executing("luke"))
	_, err := f.svc.ExecStart(ctx, team, tk.ID, "arn:1")
	require.NoError(t, err)
	_, err = f.svc.ExecComplete(ctx, team, tk.ID, "arn:2", workflow.TaskResult{Output: "not mine"})
	assert.ErrorIs(t, err, tasks.ErrNotRunnable)
	assert.Equal(t, tasks.Running, f.get(t, tk.ID).Status)

	done, err := f.svc.ExecComplete(ctx, team, tk.ID, "arn:1", workflow.TaskResult{Output: "mine", ModelID: "m"})
	require.NoError(t, err)
	assert.Equal(t, "mine", done.Result)
	assert.Zero(t, f.load(t, "luke"), "its slot is free")
	_, err = f.svc.ExecComplete(ctx, team, tk.ID, "arn:1", workflow.TaskResult{Output: "again"})
	assert.ErrorIs(t, err, tasks.ErrNotRunnable, "an ended task completes once")
	assert.Equal(t, "mine", f.get(t, tk.ID).Result)
}

// The worker runs inside the deadline of a task its assignee runs; a task
// it does not run for that assignee has none to give.
func TestRunningDeadline(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tk := f.create(t, executing("luke"))
	_, err := f.svc.RunningDeadline(ctx, team, tk.ID, "luke")
	assert.ErrorIs(t, err, tasks.ErrNotRunnable, "queued, not running")
	_, err = f.svc.ExecStart(ctx, team, tk.ID, "arn:1")
	require.NoError(t, err)
	dl, err := f.svc.RunningDeadline(ctx, team, tk.ID, "luke")
	require.NoError(t, err)
	assert.Equal(t, f.clock.Now().Add(time.Duration(workflow.MaxTaskSeconds)*time.Second), dl)
	_, err = f.svc.RunningDeadline(ctx, team, tk.ID, "sage")
	assert.ErrorIs(t, err, tasks.ErrNotRunnable, "another agent's task")
	_, err = f.svc.RunningDeadline(ctx, team, "tsk_missing", "luke")
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err))

	// A work item (not executed) runs without a deadline.
	item := f.create(t, tasks.CreateInput{Assignee: "luke", Title: "by hand"})
	_, err = f.svc.Start(ctx, team, item.ID, "agent:luke")
	require.NoError(t, err)
	dl, err = f.svc.RunningDeadline(ctx, team, item.ID, "luke")
	require.NoError(t, err)
	assert.True(t, dl.IsZero())
}
