package tasks_test

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
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// starter records the executions the task model starts and stops.
type starter struct {
	mu      sync.Mutex
	started []string
	stopped []string
	fail    bool
}

func (s *starter) Start(_ context.Context, machine, name string, _ any) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return "", errors.New("throttled")
	}
	s.started = append(s.started, name)
	return s.ExecutionARN(machine, name), nil
}

func (s *starter) Stop(_ context.Context, arn, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = append(s.stopped, arn)
	return nil
}

func (s *starter) ExecutionARN(machine, name string) string {
	return "arn:execution:" + machine + ":" + name
}

func executing(assignee string) tasks.CreateInput {
	yes := true
	return tasks.CreateInput{Assignee: assignee, Title: "run it", Execute: &yes}
}

// An executing task's first execution is named after it and is stopped by
// a cancel; reassigned, it runs again under a new name.
func TestExecutionsAreStartedStoppedAndRenamedOnReassign(t *testing.T) {
	f := newFixture(t)
	st := &starter{}
	f.svc.Workflows = st
	ctx := context.Background()

	tk := f.create(t, executing("luke"))
	assert.Equal(t, []string{tk.ID}, st.started)
	_, err := f.svc.Reassign(ctx, team, tk.ID, "u", "dana")
	require.NoError(t, err)
	assert.Equal(t, []string{tk.ID, tk.ID + "-r2"}, st.started, "a new execution name for the second run")
	assert.Equal(t, []string{st.ExecutionARN(workflow.Delegation, tk.ID)}, st.stopped, "the first run is stopped")

	_, err = f.svc.Cancel(ctx, team, tk.ID, "u", "not needed")
	require.NoError(t, err)
	assert.Equal(t, st.ExecutionARN(workflow.Delegation, tk.ID+"-r2"), st.stopped[1])
}

// A task whose execution cannot start fails at once and gives its slot
// back, instead of sitting queued with nothing to run it.
func TestAnUnstartableTaskFailsAndFreesItsSlot(t *testing.T) {
	f := newFixture(t)
	f.svc.Workflows = &starter{fail: true}
	_, err := f.svc.Create(context.Background(), team, user, executing("luke"), false)
	require.Error(t, err)
	list, _, err := f.svc.List(context.Background(), team, tasks.Filter{Assignee: "luke"}, paging.Page{Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, tasks.Failed, list[0].Status)
	assert.Equal(t, 0, f.load(t, "luke"))
}

// A task blocked for approval gives its slot back and its deadline up;
// while the agent's five slots are taken it cannot resume (AgentBusy, the
// machine retries); with one free it runs again with a fresh deadline. The
// steps are idempotent for their execution.
func TestBlockedForApprovalHoldsNoSlotAndResumesWithOne(t *testing.T) {
	f := newFixture(t)
	f.svc.Workflows = &starter{}
	ctx := context.Background()
	tk := f.create(t, executing("luke"))
	arn := "arn:execution:delegation:" + tk.ID
	_, err := f.svc.ExecStart(ctx, team, tk.ID, arn)
	require.NoError(t, err)

	blocked, err := f.svc.ExecBlockForApproval(ctx, team, tk.ID, arn, []string{"apr_1"})
	require.NoError(t, err)
	assert.Equal(t, tasks.Blocked, blocked.Status)
	assert.Equal(t, tasks.ReasonAwaitingApproval, blocked.StatusReason)
	assert.Nil(t, blocked.Deadline)
	assert.Equal(t, 0, f.load(t, "luke"))
	again, err := f.svc.ExecBlockForApproval(ctx, team, tk.ID, arn, []string{"apr_1"})
	require.NoError(t, err, "a retried block succeeds")
	assert.Equal(t, blocked.Version, again.Version)
	_, err = f.svc.ExecBlockForApproval(ctx, team, tk.ID, "arn:other", nil)
	assert.ErrorIs(t, err, tasks.ErrNotRunnable, "another execution's")

	var board []tasks.Task
	for range tasks.MaxActivePerAgent {
		board = append(board, f.executed(t, tasks.CreateInput{Assignee: "luke", Title: "busy"}))
	}
	_, err = f.svc.ExecResumeApproved(ctx, team, tk.ID, arn)
	assert.ErrorIs(t, err, tasks.ErrAgentBusy)
	assert.Equal(t, tasks.Blocked, f.get(t, tk.ID).Status)

	_, err = f.svc.Cancel(ctx, team, board[0].ID, "u", "room")
	require.NoError(t, err)
	resumed, err := f.svc.ExecResumeApproved(ctx, team, tk.ID, arn)
	require.NoError(t, err)
	assert.Equal(t, tasks.Running, resumed.Status)
	assert.Empty(t, resumed.StatusReason)
	require.NotNil(t, resumed.Deadline, "a fresh deadline")
	assert.Equal(t, tasks.MaxActivePerAgent, f.load(t, "luke"))
	_, err = f.svc.ExecResumeApproved(ctx, team, tk.ID, arn)
	require.NoError(t, err, "a retried resume succeeds")
	assert.Equal(t, tasks.MaxActivePerAgent, f.load(t, "luke"), "and takes no second slot")

	// An execution that fails while the task waits fails it from blocked.
	_, err = f.svc.ExecBlockForApproval(ctx, team, tk.ID, arn, nil)
	require.NoError(t, err)
	failed, err := f.svc.ExecFail(ctx, team, tk.ID, arn, "States.TaskFailed", "boom")
	require.NoError(t, err)
	assert.Equal(t, tasks.Failed, failed.Status)
	assert.Equal(t, "States.TaskFailed: boom", failed.Error, "the error names the failure and its cause")
}

// A failure without a cause is named alone (no dangling separator); a
// Lambda error's cause is its message.
func TestAFailedExecutionsErrorNamesItsCause(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, c := range []struct{ name, cause, want string }{
		{"States.TaskFailed", "", "States.TaskFailed"},
		{"Error", `{"errorMessage":"no luck","errorType":"Error"}`, "Error: no luck"},
		{"States.Timeout", "", "States.Timeout"},
	} {
		tk := f.create(t, executing("luke"))
		arn := "arn:execution:delegation:" + tk.ID
		_, err := f.svc.ExecStart(ctx, team, tk.ID, arn)
		require.NoError(t, err)
		failed, err := f.svc.ExecFail(ctx, team, tk.ID, arn, c.name, c.cause)
		require.NoError(t, err)
		assert.Equal(t, c.want, failed.Error, c.name)
	}
}

// A task that ends while it waits for approvals (canceled, or failed from
// blocked) ends its pending approvals as canceled in the same write: they
// leave the pending listing and a later decision is a 409. One decided
// before, or never stored, is left as it is.
func TestEndingABlockedTaskCancelsItsPendingApprovals(t *testing.T) {
	f := newFixture(t)
	f.svc.Workflows = &starter{}
	ctx := context.Background()
	apr := &approvals.Service{Store: f.store, Now: f.clock.Now}
	wait := func(tk tasks.Task, arn string) (pending, decided, unstored string) {
		ids := []string{approvals.NewID(), approvals.NewID(), approvals.NewID()}
		_, err := f.svc.ExecBlockForApproval(ctx, team, tk.ID, arn, ids)
		require.NoError(t, err)
		for _, id := range ids[:2] {
			_, err := apr.Request(ctx, team, tk.ID, arn, "token-"+id, workflow.ApprovalWait{ApprovalID: id, CallID: "call-" + id,
				Tool: "send_agent_message", Agent: "luke", TimeoutSeconds: 60})
			require.NoError(t, err)
		}
		_, err = apr.Decide(ctx, team, ids[1], "user:key_test", approvals.DecideInput{Decision: workflow.DecisionApprove})
		require.NoError(t, err)
		return ids[0], ids[1], ids[2]
	}
	check := func(tk tasks.Task, pending, decided, unstored string, ended tasks.Status) {
		t.Helper()
		a, err := apr.Get(ctx, team, pending)
		require.NoError(t, err)
		assert.Equal(t, approvals.Canceled, a.Status)
		assert.Contains(t, a.Reason, string(ended))
		assert.NotNil(t, a.DecidedAt)
		b, err := apr.Get(ctx, team, decided)
		require.NoError(t, err)
		assert.Equal(t, approvals.Approved, b.Status, "a decided approval stays decided")
		_, err = apr.Get(ctx, team, unstored)
		assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "nothing is made for an approval never stored")
		list, _, err := apr.List(ctx, team, approvals.Filter{TaskID: tk.ID}, paging.Page{Limit: 10})
		require.NoError(t, err)
		assert.Empty(t, list, "no longer listed as pending")
		list, _, err = apr.List(ctx, team, approvals.Filter{TaskID: tk.ID, Status: approvals.Canceled}, paging.Page{Limit: 10})
		require.NoError(t, err)
		require.Len(t, list, 1)
		_, err = apr.Decide(ctx, team, pending, "user:key_test", approvals.DecideInput{Decision: workflow.DecisionApprove})
		var ae *apperr.Error
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, apperr.ECONFLICT, ae.Code)
		assert.Equal(t, "AlreadyDecided", ae.Reason)
		assert.Equal(t, string(approvals.Canceled), ae.Details["status"])
	}

	tk := f.create(t, executing("luke"))
	arn := "arn:execution:delegation:" + tk.ID
	_, err := f.svc.ExecStart(ctx, team, tk.ID, arn)
	require.NoError(t, err)
	p, d, u := wait(tk, arn)
	canceled, err := f.svc.Cancel(ctx, team, tk.ID, "user:key_test", "not needed")
	require.NoError(t, err)
	assert.Equal(t, tasks.Canceled, canceled.Status)
	check(tk, p, d, u, tasks.Canceled)

	tk = f.create(t, executing("luke"))
	arn = "arn:execution:delegation:" + tk.ID
	_, err = f.svc.ExecStart(ctx, team, tk.ID, arn)
	require.NoError(t, err)
	p, d, u = wait(tk, arn)
	failed, err := f.svc.ExecFail(ctx, team, tk.ID, arn, "States.TaskFailed", "boom")
	require.NoError(t, err)
	assert.Equal(t, tasks.Failed, failed.Status)
	check(tk, p, d, u, tasks.Failed)
}

// A parent waiting on a child that waits for a human's approval is blocked
// too (no slot, no clock) and its child-waits are re-armed while it is;
// it runs again, with a fresh deadline and a slot, when its execution
// resumes it after its children, and a running parent past its deadline
// is told it timed out. A child that blocks before its parent's wait
// registers blocks the parent at the registration.
func TestAParentWaitingOnAChildAwaitingApprovalIsBlockedUntilItResumes(t *testing.T) {
	f := newFixture(t)
	f.svc.Workflows = &starter{}
	ctx := context.Background()
	parent := f.create(t, executing("kyra"))
	parentARN := "arn:execution:delegation:" + parent.ID
	_, err := f.svc.ExecStart(ctx, team, parent.ID, parentARN)
	require.NoError(t, err)
	startChild := func(to string) (tasks.Task, string) {
		yes := true
		c, err := f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: to, ParentID: parent.ID, Title: "help", Execute: &yes}, false)
		require.NoError(t, err)
		arn := "arn:execution:delegation:" + c.ID
		_, err = f.svc.ExecStart(ctx, team, c.ID, arn)
		require.NoError(t, err)
		return c, arn
	}
	// A fan-out: both children exist before the parent's waits register.
	child, childARN := startChild("luke")
	second, secondARN := startChild("sage")
	require.NoError(t, f.svc.Await(ctx, team, parent.ID, parentARN, child.ID, "token-1"))
	assert.Equal(t, 1, f.load(t, "kyra"))

	_, err = f.svc.ExecBlockForApproval(ctx, team, child.ID, childARN, []string{"apr_1"})
	require.NoError(t, err)
	p := f.get(t, parent.ID)
	assert.Equal(t, tasks.Blocked, p.Status, "the parent waits for the human too")
	assert.Equal(t, tasks.ReasonAwaitingApproval, p.StatusReason)
	assert.Nil(t, p.Deadline, "its clock is paused")
	assert.Empty(t, p.ApprovalIDs, "no approval of its own")
	assert.Zero(t, f.load(t, "kyra"), "it holds no slot")
	wait, err := f.svc.ExecRecheckWait(ctx, team, parent.ID, parentARN)
	require.NoError(t, err)
	assert.Equal(t, tasks.BlockedRecheckSeconds, wait, "a blocked parent's wait is re-armed")

	// A second child blocked before the parent's wait on it registered:
	// the registration still works on the blocked parent.
	_, err = f.svc.ExecBlockForApproval(ctx, team, second.ID, secondARN, []string{"apr_2"})
	require.NoError(t, err)
	require.NoError(t, f.svc.Await(ctx, team, parent.ID, parentARN, second.ID, "token-2"))

	// The child resumes and ends; the parent stays blocked until its own
	// execution resumes it.
	_, err = f.svc.ExecResumeApproved(ctx, team, child.ID, childARN)
	require.NoError(t, err)
	assert.Equal(t, tasks.Blocked, f.get(t, parent.ID).Status)
	f.clock.Advance(time.Hour)
	resumed, err := f.svc.ExecResumeWaiting(ctx, team, parent.ID, parentARN)
	require.NoError(t, err)
	assert.Equal(t, tasks.Running, resumed.Status)
	require.NotNil(t, resumed.Deadline)
	assert.Equal(t, f.clock.Now().Add(time.Duration(workflow.MaxTaskSeconds)*time.Second), *resumed.Deadline, "a fresh deadline")
	assert.Equal(t, 1, f.load(t, "kyra"))
	again, err := f.svc.ExecResumeWaiting(ctx, team, parent.ID, parentARN)
	require.NoError(t, err, "a running parent is left as it is")
	assert.Equal(t, resumed.Version, again.Version)
	assert.Equal(t, 1, f.load(t, "kyra"), "and takes no second slot")
	_, err = f.svc.ExecResumeWaiting(ctx, team, parent.ID, "arn:other")
	assert.ErrorIs(t, err, tasks.ErrNotRunnable, "another execution's")

	wait, err = f.svc.ExecRecheckWait(ctx, team, parent.ID, parentARN)
	require.NoError(t, err)
	assert.Equal(t, int((time.Duration(workflow.MaxTaskSeconds) * time.Second).Seconds()), wait, "a running parent waits until its deadline")
	f.clock.Advance(time.Duration(workflow.MaxTaskSeconds) * time.Second)
	wait, err = f.svc.ExecRecheckWait(ctx, team, parent.ID, parentARN)
	require.NoError(t, err)
	assert.Zero(t, wait, "at its deadline it has timed out")
	_, err = f.svc.ExecRecheckWait(ctx, team, parent.ID, "arn:other")
	assert.ErrorIs(t, err, tasks.ErrNotRunnable)
}

// blockedChild is a running parent of kyra's (execution arn:p) with a
// running child of luke's (arn:c) blocked for approval, no wait
// registered on it yet.
func (f *fixture) blockedChild(t *testing.T) (parent, child tasks.Task) {
	t.Helper()
	f.svc.Workflows = &starter{}
	ctx := context.Background()
	parent = f.create(t, executing("kyra"))
	_, err := f.svc.ExecStart(ctx, team, parent.ID, "arn:p")
	require.NoError(t, err)
	yes := true
	child, err = f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", ParentID: parent.ID, Title: "help", Execute: &yes}, false)
	require.NoError(t, err)
	_, err = f.svc.ExecStart(ctx, team, child.ID, "arn:c")
	require.NoError(t, err)
	_, err = f.svc.ExecBlockForApproval(ctx, team, child.ID, "arn:c", []string{"apr_1"})
	require.NoError(t, err)
	return parent, child
}

// A parent that does not wait on its child (the child was delegated
// without wait_for_result) keeps running when the child blocks.
func TestAParentThatDoesNotWaitKeepsRunning(t *testing.T) {
	f := newFixture(t)
	parent, _ := f.blockedChild(t)
	assert.Equal(t, tasks.Running, f.get(t, parent.ID).Status)
	assert.Equal(t, 1, f.load(t, "kyra"))
}

// A child that blocks for approval before its parent's wait on it has
// registered found no waiter: the registration blocks the parent.
func TestAWaitRegisteredOnABlockedChildBlocksTheParent(t *testing.T) {
	f := newFixture(t)
	parent, child := f.blockedChild(t)
	assert.Equal(t, tasks.Running, f.get(t, parent.ID).Status, "nobody waits on the child yet")
	require.NoError(t, f.svc.Await(context.Background(), team, parent.ID, "arn:p", child.ID, "token"))
	p := f.get(t, parent.ID)
	assert.Equal(t, tasks.Blocked, p.Status)
	assert.Equal(t, tasks.ReasonAwaitingApproval, p.StatusReason)
	assert.Zero(t, f.load(t, "kyra"))
}

// The block climbs: a grandparent waiting on a parent that waits on a child
// awaiting approval is blocked too (each a conditional write of its own).
func TestABlockClimbsEveryWaitingAncestor(t *testing.T) {
	f := newFixture(t)
	f.svc.Workflows = &starter{}
	ctx := context.Background()
	start := func(to, parentID string) (tasks.Task, string) {
		yes := true
		c, err := f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: to, ParentID: parentID, Title: "work", Execute: &yes}, false)
		require.NoError(t, err)
		arn := "arn:execution:delegation:" + c.ID
		_, err = f.svc.ExecStart(ctx, team, c.ID, arn)
		require.NoError(t, err)
		return c, arn
	}
	grand, grandARN := start("kyra", "")
	parent, parentARN := start("luke", grand.ID)
	child, childARN := start("sage", parent.ID)
	require.NoError(t, f.svc.Await(ctx, team, grand.ID, grandARN, parent.ID, "token-g"))
	require.NoError(t, f.svc.Await(ctx, team, parent.ID, parentARN, child.ID, "token-p"))
	_, err := f.svc.ExecBlockForApproval(ctx, team, child.ID, childARN, []string{"apr_1"})
	require.NoError(t, err)
	for _, id := range []string{parent.ID, grand.ID} {
		got := f.get(t, id)
		assert.Equal(t, tasks.Blocked, got.Status, id)
		assert.Equal(t, tasks.ReasonAwaitingApproval, got.StatusReason, id)
	}
	assert.Zero(t, f.load(t, "kyra")+f.load(t, "luke"), "neither ancestor holds a slot")
}
