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

	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// approvalTeam is a demo team with ava, whose model sends luke a message
// (send_agent_message) and then reads its own inbox, and a policy gating
// send_agent_message with the given expiry.
func approvalTeam(t *testing.T, e env, expiry int) demoTeam {
	t.Helper()
	d := mustDemoTeam(t, e)
	_, err := agents.NewService(e.db.agents).Create(context.Background(), d.id, agents.CreateInput{
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
	// The call ran with the human's arguments: luke got the edited message
	// (the fan-out into inboxes runs from the bus, after the send).
	assert.Eventually(t, func() bool {
		for _, m := range d.inbox("luke") {
			if strings.Contains(fmt.Sprint(m["content"]), edited) {
				return true
			}
		}
		return false
	}, 30*time.Second, 250*time.Millisecond, "luke's inbox has the edited message")
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

	board := holdSlots(t, svc, d.id, "luke", "ava", tasks.MaxActivePerAgent)
	_, err = svc.Create(ctx, d.id, user, tasks.CreateInput{Assignee: "ava", ParentID: board[0].ParentID, Title: "one too many"}, false)
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

// heldChat posts a user message to ava, whose model sends luke a message
// that the policy gates: the reply answers 201 at once, with the approval
// and the task that finishes the reply among its pending work. It
// returns the approval (once the task's execution has stored it), the
// task's id and the id of the conversation's newest message.
func (d demoTeam) heldChat(conv string) (apr map[string]any, taskID, after string) {
	t := d.t
	t.Helper()
	start := lastSeq(t)
	turn := d.post(conv, map[string]any{"content": "Tell luke the release ships on Friday"})
	reply := lastReply(t, turn)
	// The turn's calls: a turn built with the gate (turnBuilt and gate
	// in the budget table: 13 DynamoDB calls, the gate's Lambda) and its
	// tools (three model calls: the held call, the inbox read (one Query),
	// the answer), plus holding the call: the policy read, the held task
	// created (its conversation, slot and agent in one transaction),
	// announced and its execution started. Each model call charged to the
	// team's budget (charged; the turn's first is the team's first).
	turns, _ := invocations(t, start, "conversations", d.id)
	require.Len(t, turns, 1)
	within(t, "a chat turn holding a call for approval", turns[0].Calls,
		charged(calls{"DynamoDB": 16, "DynamoDB.TransactWriteItems": 3, "BedrockRuntime": 3, "Lambda": 1, "EventBridge": 1, "SFN": 1, "SFN.StartExecution": 1}, 3, true))
	assert.Contains(t, fmt.Sprint(reply["content"]), "awaiting_approval", "the model read that its call waits")
	pending, _ := reply["pending"].([]any)
	require.Len(t, pending, 2, "the approval and the task that finishes the reply: %v", reply)
	ap, tk := pending[0].(map[string]any), pending[1].(map[string]any)
	assert.Equal(t, "approval", ap["type"])
	assert.Equal(t, "pending", ap["status"])
	assert.Equal(t, "ava", ap["agent"])
	assert.Equal(t, "task", tk["type"])
	assert.Equal(t, "ava", tk["agent"])
	for _, m := range d.inbox("luke") {
		assert.NotEqual(t, "ava", m["from"], "the held call has not run")
	}
	taskID = tk["id"].(string)
	apr = d.pendingApproval(taskID)
	assert.Equal(t, ap["id"], apr["id"], "the reply names the approval the task waits on")
	assert.Equal(t, conv, apr["conversation_id"])
	assert.Equal(t, "send_agent_message", apr["tool"])
	assert.Equal(t, "luke", apr["arguments"].(map[string]any)["to_agent"], "the call as the model wrote it in the chat")
	return apr, taskID, d.lastID(conv)
}

// A chat reply's call that the policy gates waits for a human in a task
// of the same agent, blocked on a task token; approved with edited
// arguments, the call runs with them, the model finishes the answer, and
// the answer is posted into the conversation as the agent's message.
func TestChatCallWaitsForApprovalAndTheAnswerIsPostedInTheConversation(t *testing.T) {
	e := mustEnv(t)
	d := approvalTeam(t, e, 600)
	svc, c := taskService(t, e)
	conv := d.conversation("ava")
	apr, taskID, after := d.heldChat(conv)

	blocked := waitBlocked(t, svc, d.id, taskID)
	assert.Equal(t, tasks.ReasonAwaitingApproval, blocked.StatusReason)
	assert.Equal(t, conv, blocked.ConversationID)
	assert.Zero(t, load(t, svc, d.id, "ava"), "the held reply holds no slot")

	edited := "Edited by a human: the release ships on Monday"
	st, got := d.call("POST", "/v1/approvals/"+apr["id"].(string), map[string]any{"decision": "approve",
		"arguments": map[string]any{"to_agent": "luke", "message": edited, "message_type": "notification"}})
	require.Equal(t, 200, st, got)

	posted := d.awaitPosted(conv, after, taskID)
	assert.Equal(t, "ava", posted["agent"])
	assert.Equal(t, map[string]any{"type": "task", "id": taskID, "status": "completed", "agent": "ava"}, posted["result_of"])
	assert.Contains(t, fmt.Sprint(posted["content"]), "sent message", "the model finished with the call's result")
	assert.NotContains(t, fmt.Sprint(posted["content"]), "rejected")
	assert.Eventually(t, func() bool {
		for _, m := range d.inbox("luke") {
			if m["from"] == "ava" && fmt.Sprint(m["content"]) == edited {
				return true
			}
		}
		return false
	}, 30*time.Second, 250*time.Millisecond, "luke got the human's edited message (fanned out from the bus)")
	done := waitTask(t, svc, d.id, taskID, 30*time.Second)
	assert.Equal(t, 1, countEvents(done, "approval_requested", ""))
	_, history := waitExecution(t, c, done.Execution)
	entered := statesEntered(history)
	assert.Equal(t, 1, count(entered, "AwaitApproval"))
	assert.Equal(t, 2, count(entered, "RunTask"), "one attempt holds the call (no model), one finishes the reply")
}

// A rejected chat call reaches the model as the tool's result, with the
// reason, and the answer it finishes with is posted; the call never runs.
func TestRejectedChatCallReachesTheModelAndItsAnswerIsPosted(t *testing.T) {
	e := mustEnv(t)
	d := approvalTeam(t, e, 600)
	conv := d.conversation("ava")
	apr, taskID, after := d.heldChat(conv)
	st, got := d.call("POST", "/v1/approvals/"+apr["id"].(string), map[string]any{"decision": "reject", "reason": "luke is on leave"})
	require.Equal(t, 200, st, got)
	posted := d.awaitPosted(conv, after, taskID)
	content := fmt.Sprint(posted["content"])
	assert.Contains(t, content, "rejected by a human reviewer")
	assert.Contains(t, content, "luke is on leave")
	for _, m := range d.inbox("luke") {
		assert.NotEqual(t, "ava", m["from"], "the rejected call did not run")
	}
}

// A parent that delegated and waits for a child whose call waits for
// approval is blocked too: no slot, no clock. Its child-wait reaches the
// parent's old deadline, is rechecked and waits on; once the call is
// approved and the child ends, the parent runs again with a fresh
// deadline and completes with the child's result.
func TestAParentWaitsBlockedPastItsDeadlineWhileItsChildAwaitsApproval(t *testing.T) {
	e := mustEnv(t)
	d := approvalTeam(t, e, 600)
	ctx := context.Background()
	_, err := agents.NewService(e.db.agents).Create(ctx, d.id, agents.CreateInput{
		Slug: "dex", Name: "Dex", Model: &agents.Model{Script: "delegate:ava"},
		Skills: []agents.Skill{{Name: "planning", Description: "plans the work", Priority: 50}},
	})
	require.NoError(t, err)
	svc, c := taskService(t, e)
	start := lastSeq(t)
	const parentTimeout = 8
	parent, err := svc.Create(ctx, d.id, user, executed(d.id, "dex", "Ask the team about the release", parentTimeout), false)
	require.NoError(t, err)

	var child map[string]any
	require.Eventually(t, func() bool {
		kids := d.tasksOf("ava")
		if len(kids) == 0 {
			return false
		}
		child = kids[0]
		return true
	}, 30*time.Second, 200*time.Millisecond, "dex delegated to ava")
	require.Equal(t, parent.ID, child["parent_task_id"])
	apr := d.pendingApproval(child["id"].(string))
	blocked := waitBlocked(t, svc, d.id, parent.ID)
	assert.Equal(t, tasks.ReasonAwaitingApproval, blocked.StatusReason)
	assert.Nil(t, blocked.Deadline, "the parent's clock is paused")
	assert.Zero(t, load(t, svc, d.id, "dex"), "the parent holds no slot")

	// Past the parent's deadline as it stood, it still waits.
	time.Sleep((parentTimeout + 4) * time.Second)
	cur, err := svc.Get(ctx, d.id, parent.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.Blocked, cur.Status, "not timed out while it waits for a human: %s", cur.Error)

	st, got := d.call("POST", "/v1/approvals/"+apr["id"].(string), map[string]any{"decision": "approve"})
	require.Equal(t, 200, st, got)
	done := waitTask(t, svc, d.id, parent.ID, 60*time.Second)
	require.Equal(t, tasks.Completed, done.Status, done.Error)
	assert.Contains(t, done.Result, "completed", "the parent finished with its child's result")
	assert.Equal(t, 1, countEvents(done, "blocked", ""))
	assert.Equal(t, 1, countEvents(done, "resumed", ""))
	_, history := waitExecution(t, c, done.Execution)
	entered := statesEntered(history)
	assert.GreaterOrEqual(t, count(entered, "RecheckWait"), 1, "the wait reached the old deadline and was rechecked")
	assert.Equal(t, 1, count(entered, "ResumeAfterChildren"))
	assert.Zero(t, count(entered, "ParentTimedOut"))

	// Call budgets of the parent's new steps: a recheck reads the task;
	// the resume is one transition (the task read, one transaction with
	// the slot, announced) after that read.
	all, _ := invocations(t, start, "task-lifecycle", d.id)
	steps := map[string][]invocation{}
	for _, inv := range all {
		if inv.TaskID == parent.ID {
			steps[inv.Action] = append(steps[inv.Action], inv)
		}
	}
	require.NotEmpty(t, steps["recheck_wait"])
	for _, inv := range steps["recheck_wait"] {
		within(t, "task-lifecycle recheck_wait", inv.Calls, calls{"DynamoDB": 1, "DynamoDB.GetItem": 1})
	}
	require.Len(t, steps["resume_waiting"], 1)
	within(t, "task-lifecycle resume_waiting", steps["resume_waiting"][0].Calls,
		calls{"DynamoDB": 3, "DynamoDB.GetItem": 2, "DynamoDB.TransactWriteItems": 1, "EventBridge": 1})
}
