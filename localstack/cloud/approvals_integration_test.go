//go:build integration

// Human approval of tool calls on the local cloud: a task's tool call that
// the team's policy gates waits for a decision in the real delegation
// machine (BlockForApproval, one task token per approval in AwaitApprovals,
// ResumeApproved), with the task blocked and holding no slot, and the
// decision (approve with edited arguments, reject, expiry) reaching the
// model as the tool's result.
package cloud_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/tasks"
)

// approvalTeam is a demo team with ava, whose model sends luke a message
// (send_agent_message) and then reads its own inbox, and a policy gating
// send_agent_message with the given expiry.
func approvalTeam(t *testing.T, e env, expiry int) demoTeam {
	t.Helper()
	d := mustDemoTeam(t, e)
	_, err := agents.NewService(e.store).Create(context.Background(), d.id, agents.CreateInput{
		Slug: "ava", Name: "Ava", Model: &agents.Model{Script: "message:luke"},
		Skills: []agents.Skill{{Name: "coordination", Description: "coordinates the team", Priority: 50}},
	})
	require.NoError(t, err)
	st, p := d.call("PUT", "/v1/approval-policy", map[string]any{"tools": []string{"send_agent_message"}, "expiry_seconds": expiry})
	require.Equal(t, 200, st, p)
	return d
}

// pendingApproval waits for the task's one pending approval.
func (d demoTeam) pendingApproval(taskID string) map[string]any {
	d.t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		st, list := d.call("GET", "/v1/approvals?task_id="+taskID, nil)
		require.Equal(d.t, 200, st, list)
		if items, _ := list["items"].([]any); len(items) > 0 {
			require.Len(d.t, items, 1)
			return items[0].(map[string]any)
		}
		require.True(d.t, time.Now().Before(deadline), "no approval for task %s", taskID)
		time.Sleep(300 * time.Millisecond)
	}
}

// waitBlocked waits until the task is blocked for approval.
func waitBlocked(t *testing.T, svc *tasks.Service, team, id string) tasks.Task {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := svc.Get(context.Background(), team, id)
		require.NoError(t, err)
		if got.Status == tasks.Blocked {
			return got
		}
		require.True(t, time.Now().Before(deadline), "task %s is %s", id, got.Status)
		time.Sleep(200 * time.Millisecond)
	}
}

func TestApprovalWithEditedArgumentsRunsTheCallAndItsResultReachesTheTask(t *testing.T) {
	e := mustEnv(t)
	d := approvalTeam(t, e, 600)
	svc, c := taskService(t, e)
	ctx := context.Background()

	task, err := svc.Create(ctx, d.id, user, executed(d.id, "ava", "Ask luke about the release", 60), false)
	require.NoError(t, err)
	apr := d.pendingApproval(task.ID)
	id := apr["id"].(string)
	assert.Equal(t, "pending", apr["status"])
	assert.Equal(t, "send_agent_message", apr["tool"])
	assert.Equal(t, "ava", apr["agent"])
	assert.Equal(t, task.ID, apr["task_id"])
	assert.Equal(t, []any{"policy:tool"}, apr["reasons"])
	assert.Equal(t, "luke", apr["arguments"].(map[string]any)["to_agent"], "the call is stored with its arguments")
	assert.NotEmpty(t, apr["expires_at"])

	// The task waits blocked: no slot, no clock.
	blocked := waitBlocked(t, svc, d.id, task.ID)
	assert.Equal(t, tasks.ReasonAwaitingApproval, blocked.StatusReason)
	assert.Nil(t, blocked.Deadline, "its 120 s clock is paused")
	assert.Zero(t, load(t, svc, d.id, "ava"), "a task waiting for approval holds no slot")
	st, one := d.call("GET", "/v1/approvals/"+id, nil)
	require.Equal(t, 200, st, one)
	assert.Equal(t, id, one["id"])

	// Bad decisions change nothing and name the field.
	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"decision": "maybe"}, "decision"},
		{map[string]any{"decision": "reject", "arguments": map[string]any{"to_agent": "luke"}}, "arguments"},
		{map[string]any{"decision": "approve", "arguments": map[string]any{"to_agent": "luke", "message": 42}}, "arguments.message"},
		{map[string]any{"decision": "approve", "arguments": map[string]any{"to_agent": "luke", "message": "hi", "cc": "x"}}, "arguments.cc"},
		{map[string]any{"decision": "approve", "reason": strings.Repeat("x", 1001)}, "reason"},
	} {
		resp := d.do("POST", "/v1/approvals/"+id, bad.body)
		require.Equal(t, 400, resp.Status, string(resp.Body))
		_, field, _ := resp.ErrorFields(t)
		assert.Equal(t, bad.field, field, bad.body)
	}

	edited := "Edited by a human: the release ships on Friday, confirm the changelog"
	body := map[string]any{"decision": "approve", "arguments": map[string]any{"to_agent": "luke", "message": edited, "message_type": "info_request"}}
	first := d.do("POST", "/v1/approvals/"+id, body, "Idempotency-Key", "approve-"+id)
	require.Equal(t, 200, first.Status, string(first.Body))
	again := d.do("POST", "/v1/approvals/"+id, body, "Idempotency-Key", "approve-"+id)
	assert.Equal(t, 200, again.Status, "an idempotent retry replays")
	assert.JSONEq(t, string(first.Body), string(again.Body))
	twice := d.do("POST", "/v1/approvals/"+id, map[string]any{"decision": "reject"})
	require.Equal(t, 409, twice.Status, "decided once")
	_, _, reason := twice.ErrorFields(t)
	assert.Equal(t, "AlreadyDecided", reason)

	done := waitTask(t, svc, d.id, task.ID, 60*time.Second)
	require.Equal(t, tasks.Completed, done.Status, done.Error)
	// The call ran with the human's arguments: luke got the edited message.
	var found bool
	for _, m := range d.inbox("luke") {
		found = found || strings.Contains(fmt.Sprint(m["content"]), edited)
	}
	assert.True(t, found, "luke's inbox has the edited message")
	assert.NotContains(t, done.Result, "rejected")
	assert.Equal(t, 1, countEvents(done, "approval_requested", ""))
	assert.Equal(t, 1, countEvents(done, "blocked", ""))
	assert.Equal(t, 1, countEvents(done, "resumed", ""))
	assert.Equal(t, 2, done.ToolCalls)
	assert.Zero(t, load(t, svc, d.id, "ava"))

	st, got := d.call("GET", "/v1/approvals/"+id, nil)
	require.Equal(t, 200, st)
	assert.Equal(t, "approved", got["status"])
	assert.Equal(t, edited, got["approved_arguments"].(map[string]any)["message"])
	st, list := d.call("GET", "/v1/approvals", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, list["items"], "no approval is pending any more")

	dsc, history := waitExecution(t, c, done.Execution)
	assert.Equal(t, "SUCCEEDED", string(dsc.Status))
	entered := statesEntered(history)
	assert.Equal(t, 1, count(entered, "BlockForApproval"))
	assert.Equal(t, 1, count(entered, "AwaitApproval"))
	assert.Equal(t, 1, count(entered, "ResumeApproved"))
	assert.Equal(t, 2, count(entered, "RunTask"))
}

func TestRejectedCallReachesTheModelAsARejection(t *testing.T) {
	e := mustEnv(t)
	d := approvalTeam(t, e, 600)
	svc, _ := taskService(t, e)
	task, err := svc.Create(context.Background(), d.id, user, executed(d.id, "ava", "Ask luke about the release", 60), false)
	require.NoError(t, err)
	id := d.pendingApproval(task.ID)["id"].(string)
	st, got := d.call("POST", "/v1/approvals/"+id, map[string]any{"decision": "reject", "reason": "do not bother luke this week"})
	require.Equal(t, 200, st, got)
	assert.Equal(t, "rejected", got["status"])

	done := waitTask(t, svc, d.id, task.ID, 60*time.Second)
	require.Equal(t, tasks.Completed, done.Status, done.Error)
	assert.Contains(t, done.Result, "rejected by a human reviewer")
	assert.Contains(t, done.Result, "do not bother luke this week", "the model reads the reason")
	for _, m := range d.inbox("luke") {
		assert.NotEqual(t, "ava", m["from"], "the rejected call did not run")
	}
}

func TestExpiredApprovalEndsAsARejection(t *testing.T) {
	e := mustEnv(t)
	d := approvalTeam(t, e, 5)
	svc, _ := taskService(t, e)
	task, err := svc.Create(context.Background(), d.id, user, executed(d.id, "ava", "Ask luke about the release", 60), false)
	require.NoError(t, err)
	id := d.pendingApproval(task.ID)["id"].(string)

	done := waitTask(t, svc, d.id, task.ID, 60*time.Second)
	require.Equal(t, tasks.Completed, done.Status, done.Error)
	assert.Contains(t, done.Result, "expired")
	st, got := d.call("GET", "/v1/approvals/"+id, nil)
	require.Equal(t, 200, st)
	assert.Equal(t, "expired", got["status"])
	assert.Equal(t, "expiry", got["decided_by"])
	resp := d.do("POST", "/v1/approvals/"+id, map[string]any{"decision": "approve"})
	assert.Equal(t, 409, resp.Status, "too late")
}

// While a task waits for approval its agent's slot is free: five other
// tasks can be given to the agent (the limit is still five); the waiting
// task takes a slot back only when one is free, then completes.
func TestTaskWaitingForApprovalHoldsNoSlot(t *testing.T) {
	e := mustEnv(t)
	d := approvalTeam(t, e, 600)
	svc, _ := taskService(t, e)
	ctx := context.Background()
	task, err := svc.Create(ctx, d.id, user, executed(d.id, "ava", "Ask luke about the release", 60), false)
	require.NoError(t, err)
	id := d.pendingApproval(task.ID)["id"].(string)
	waitBlocked(t, svc, d.id, task.ID)

	var board []tasks.Task
	for i := range tasks.MaxActivePerAgent {
		b, err := svc.Create(ctx, d.id, user, tasks.CreateInput{Assignee: "ava", Title: fmt.Sprintf("board work %d", i)}, false)
		require.NoError(t, err, "task %d of ava's while one waits for approval", i+2)
		board = append(board, b)
	}
	_, err = svc.Create(ctx, d.id, user, tasks.CreateInput{Assignee: "ava", Title: "one too many"}, false)
	assertReason(t, err, "limit_exceeded", tasks.ReasonConcurrency)

	st, got := d.call("POST", "/v1/approvals/"+id, map[string]any{"decision": "approve"})
	require.Equal(t, 200, st, got)
	// The agent's five slots are taken: the task stays blocked…
	time.Sleep(3 * time.Second)
	cur, err := svc.Get(ctx, d.id, task.ID)
	require.NoError(t, err)
	assert.Equal(t, tasks.Blocked, cur.Status, "no slot, no resume")
	assert.Equal(t, tasks.MaxActivePerAgent, load(t, svc, d.id, "ava"))
	// …until one is free.
	_, err = svc.Cancel(ctx, d.id, board[0].ID, "user:key_test", "make room")
	require.NoError(t, err)
	done := waitTask(t, svc, d.id, task.ID, 60*time.Second)
	require.Equal(t, tasks.Completed, done.Status, done.Error)
	assert.Equal(t, tasks.MaxActivePerAgent-1, load(t, svc, d.id, "ava"))
}

// Cancelling a task blocked for approval ends its pending approval as
// canceled in the same transaction: it leaves the pending listing, shows
// canceled, and a decision posted afterwards is a 409 that resumes nothing.
func TestCancelingABlockedTaskCancelsItsPendingApproval(t *testing.T) {
	e := mustEnv(t)
	d := approvalTeam(t, e, 600)
	svc, _ := taskService(t, e)
	ctx := context.Background()
	task, err := svc.Create(ctx, d.id, user, executed(d.id, "ava", "Ask luke about the release", 60), false)
	require.NoError(t, err)
	id := d.pendingApproval(task.ID)["id"].(string)
	waitBlocked(t, svc, d.id, task.ID)

	st, res := d.call("POST", "/v1/tasks/"+task.ID+"/cancel", map[string]any{"reason": "no longer needed"})
	require.Equal(t, 200, st, res)
	assert.Equal(t, "canceled", res["status"])

	st, list := d.call("GET", "/v1/approvals?task_id="+task.ID, nil)
	require.Equal(t, 200, st, list)
	assert.Empty(t, list["items"], "no longer pending")
	st, list = d.call("GET", "/v1/approvals", nil)
	require.Equal(t, 200, st, list)
	for _, it := range list["items"].([]any) {
		assert.NotEqual(t, id, it.(map[string]any)["id"])
	}
	st, list = d.call("GET", "/v1/approvals?status=canceled&task_id="+task.ID, nil)
	require.Equal(t, 200, st, list)
	assert.Len(t, list["items"], 1)
	st, got := d.call("GET", "/v1/approvals/"+id, nil)
	require.Equal(t, 200, st, got)
	assert.Equal(t, "canceled", got["status"])
	assert.NotEmpty(t, got["decided_at"])
	assert.Contains(t, got["reason"], "canceled")

	resp := d.do("POST", "/v1/approvals/"+id, map[string]any{"decision": "approve"})
	require.Equal(t, 409, resp.Status, string(resp.Body))
	_, _, reason := resp.ErrorFields(t)
	assert.Equal(t, "AlreadyDecided", reason)
	cur, err := svc.Get(ctx, d.id, task.ID)
	require.NoError(t, err)
	assert.Equal(t, tasks.Canceled, cur.Status, "nothing resumed it")
	assert.Zero(t, load(t, svc, d.id, "ava"))
}

// Every approval route answers another team's key with 404 (or an empty
// list), and bad policies are refused naming the field.
func TestApprovalRoutesAreIsolatedAndValidated(t *testing.T) {
	e := mustEnv(t)
	d := approvalTeam(t, e, 600)
	other := mustDemoTeam(t, e)
	svc, _ := taskService(t, e)
	task, err := svc.Create(context.Background(), d.id, user, executed(d.id, "ava", "Ask luke about the release", 60), false)
	require.NoError(t, err)
	id := d.pendingApproval(task.ID)["id"].(string)

	st, _ := other.call("GET", "/v1/approvals/"+id, nil)
	assert.Equal(t, 404, st)
	st, _ = other.call("POST", "/v1/approvals/"+id, map[string]any{"decision": "approve"})
	assert.Equal(t, 404, st)
	st, list := other.call("GET", "/v1/approvals?status=all", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, list["items"])
	st, pol := other.call("GET", "/v1/approval-policy", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, pol["tools"], "the other team's policy is its own")
	st, _ = d.call("GET", "/v1/approvals/apr_notanid", nil)
	assert.Equal(t, 404, st)

	for _, bad := range []struct {
		body  any
		field string
	}{
		{map[string]any{"tools": []string{"read_file"}}, "tools[0]"},
		{map[string]any{"agents": []string{"Not A Slug"}}, "agents[0]"},
		{map[string]any{"min_estimated_cost_usd": -1}, "min_estimated_cost_usd"},
		{map[string]any{"expiry_seconds": 1}, "expiry_seconds"},
		{map[string]any{"expiry_seconds": 90000}, "expiry_seconds"},
		{map[string]any{"tools": "delegate_task"}, "tools"},
	} {
		resp := d.do("PUT", "/v1/approval-policy", bad.body)
		require.Equal(t, 400, resp.Status, string(resp.Body))
		_, field, _ := resp.ErrorFields(t)
		assert.Equal(t, bad.field, field, bad.body)
	}
	st, pol = d.call("GET", "/v1/approval-policy", nil)
	require.Equal(t, 200, st)
	assert.Equal(t, []any{"send_agent_message"}, pol["tools"], "a refused policy changes nothing")
	st, _ = d.call("POST", "/v1/approvals/"+id, map[string]any{"decision": "reject"})
	require.Equal(t, 200, st)
	waitTask(t, svc, d.id, task.ID, 60*time.Second)
}

// Approvals run in tasks only: a chat reply's call the policy gates is
// not run, and the model reads a tool error saying why.
func TestChatCallNeedingApprovalIsRefusedWithAToolError(t *testing.T) {
	e := mustEnv(t)
	d := approvalTeam(t, e, 600)
	conv := d.conversation("ava")
	turn := d.post(conv, map[string]any{"content": "Tell luke the release ships on Friday"})
	reply := lastReply(t, turn)
	content := fmt.Sprint(reply["content"])
	assert.Contains(t, content, "approval_required")
	assert.Contains(t, content, "approvals of tool calls run in tasks only")
	for _, m := range d.inbox("luke") {
		assert.NotEqual(t, "ava", m["from"], "the gated call did not run")
	}
	st, list := d.call("GET", "/v1/approvals?status=all", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, list["items"], "no approval is stored for a chat call")
}
