package tasks_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/approvals"
	"github.com/conclave-ai/conclave/shared/paging"
	"github.com/conclave-ai/conclave/shared/tasks"
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
		board = append(board, f.create(t, tasks.CreateInput{Assignee: "luke", Title: "board"}))
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
