package worker_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// policy is a fixed approval policy.
type policy approvals.Policy

func (p policy) Policy(context.Context, string) (approvals.Policy, error) {
	return approvals.Policy(p), nil
}

// A response with gated calls runs none of them; the attempt waits for
// every approval. Resumed with the decisions, the approved call runs with
// the human's arguments (here a delegation, which then waits for its
// child as any other), and the rejected one is answered with the
// rejection and its reason.
func TestGatedCallsWaitForApprovalAndRunAsDecided(t *testing.T) {
	tools := &fanTools{}
	w, rec := fanWorker(tools)
	w.Approvals = policy{Tools: []string{"delegate_task"}, ExpirySeconds: 90}
	tr := &fakeTracker{running: true}
	w.Tracker = tr
	p := payload("kyra")

	first, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	assert.Empty(t, tools.calls, "nothing of the response ran")
	require.NotNil(t, first.Waiting)
	require.Len(t, first.Waiting.Approvals, 2)
	assert.Empty(t, first.Waiting.ChildTaskIDs)
	for i, a := range first.Waiting.Approvals {
		assert.Equal(t, "delegate_task", a.Tool)
		assert.Equal(t, "kyra", a.Agent)
		assert.Equal(t, []string{approvals.ReasonPolicyTool}, a.Reasons)
		assert.Equal(t, 90, a.TimeoutSeconds)
		assert.Equal(t, a.ApprovalID, first.Waiting.ApprovalIDs[i])
	}
	assert.Equal(t, 2, countOf(tr.events, "approval_requested"))
	assert.Zero(t, countOf(tr.events, "tool_call"))

	gated := first.Waiting.Approvals
	p.Resume = &workflow.Resume{State: first.Waiting.State, Approvals: []workflow.ApprovalOutcome{
		{ApprovalID: gated[0].ApprovalID, Decision: workflow.DecisionApprove, Arguments: json.RawMessage(`{"to_agent":"sage","instructions":"review the parser"}`)},
		{ApprovalID: gated[1].ApprovalID, Decision: workflow.DecisionReject, Reason: "dana is on leave"},
	}}
	second, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, []string{"sage"}, tools.calls, "the approved call ran with the edited arguments; the rejected one did not")
	require.NotNil(t, second.Waiting)
	assert.Equal(t, []string{"task_sage"}, second.Waiting.ChildTaskIDs)
	assert.Equal(t, 2, second.ToolCalls)

	p.Resume = &workflow.Resume{State: second.Waiting.State, Children: []workflow.ChildOutcome{{TaskID: "task_sage", Status: "completed", Summary: "task task_sage by sage completed: fine"}}}
	third, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	assert.Nil(t, third.Waiting)
	answers := toolAnswers(rec.last())
	assert.Equal(t, "task task_sage by sage completed: fine", answers["call-1"])
	assert.Contains(t, answers["call-2"], "rejected by a human reviewer")
	assert.Contains(t, answers["call-2"], "dana is on leave")
}

// An approval whose decision did not arrive never runs its call: it is
// answered as expired.
func TestAMissingDecisionIsAnExpiry(t *testing.T) {
	tools := &fanTools{}
	w, rec := fanWorker(tools)
	w.Approvals = policy{Agents: []string{"kyra"}}
	p := payload("kyra")
	first, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	require.NotNil(t, first.Waiting)
	p.Resume = &workflow.Resume{State: first.Waiting.State, Approvals: []workflow.ApprovalOutcome{
		{ApprovalID: first.Waiting.Approvals[0].ApprovalID, Decision: workflow.DecisionExpire},
	}}
	second, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	assert.Nil(t, second.Waiting)
	assert.Empty(t, tools.calls)
	for _, out := range toolAnswers(rec.last()) {
		assert.Contains(t, out, "expired")
	}
}

// A task that continues a chat reply (TaskInput.HeldCall) asks no model
// first: it waits for the approval of the reply's call, with the chat's
// approval id and conversation. Approved with edited arguments, the call
// runs with them and the model finishes the answer with its result.
func TestAHeldChatCallWaitsFirstThenRunsAsApproved(t *testing.T) {
	tools := &fanTools{}
	w, rec := fanWorker(tools)
	p := payload("kyra")
	p.HeldCall = &workflow.ApprovalWait{ApprovalID: "apr_held", CallID: "chat-call-1", Tool: "delegate_task",
		Arguments: json.RawMessage(`{"to_agent":"luke","instructions":"fix it"}`), Reasons: []string{approvals.ReasonPolicyTool},
		TimeoutSeconds: 300, ConversationID: "conv_1"}

	first, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	assert.Empty(t, rec.reqs, "no model is asked before the decision")
	assert.Empty(t, tools.calls, "the held call did not run")
	require.NotNil(t, first.Waiting)
	require.Len(t, first.Waiting.Approvals, 1)
	got := first.Waiting.Approvals[0]
	assert.Equal(t, "apr_held", got.ApprovalID)
	assert.Equal(t, "kyra", got.Agent, "the approval is the task's agent's")
	assert.Equal(t, "conv_1", got.ConversationID)
	assert.Equal(t, []string{"apr_held"}, first.Waiting.ApprovalIDs)

	p.Resume = &workflow.Resume{State: first.Waiting.State, Approvals: []workflow.ApprovalOutcome{
		{ApprovalID: "apr_held", Decision: workflow.DecisionApprove, Arguments: json.RawMessage(`{"to_agent":"sage","instructions":"fix it"}`)},
	}}
	second, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, []string{"sage"}, tools.calls, "the call ran once, with the human's arguments")
	require.NotNil(t, second.Waiting)
	assert.Equal(t, []string{"task_sage"}, second.Waiting.ChildTaskIDs)

	p.Resume = &workflow.Resume{State: second.Waiting.State, Children: []workflow.ChildOutcome{{TaskID: "task_sage", Status: "completed", Summary: "task task_sage by sage completed: fixed"}}}
	third, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	assert.Nil(t, third.Waiting)
	assert.NotEmpty(t, third.Output)
	last := rec.last()
	assert.Equal(t, "task task_sage by sage completed: fixed", toolAnswers(last)["chat-call-1"])
	assert.Equal(t, "user", last.Messages[0].Role, "the model's conversation starts with the task's instructions")
}

// A held call without its ids is an invalid task, never a call run
// unapproved.
func TestAHeldChatCallWithoutItsIDsIsInvalid(t *testing.T) {
	tools := &fanTools{}
	w, rec := fanWorker(tools)
	p := payload("kyra")
	p.HeldCall = &workflow.ApprovalWait{Tool: "delegate_task", Arguments: json.RawMessage(`{}`)}
	_, err := w.Run(context.Background(), p)
	var invalid workflow.InvalidTask
	require.ErrorAs(t, err, &invalid)
	assert.Empty(t, tools.calls)
	assert.Empty(t, rec.reqs)
}
