package agenttools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/agenttools"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// chatCaller is kyra answering in a new conversation of the team, offered
// her chat tools, whose tools may wait until waitUntil.
func (f *fixture) chatCaller(tb testing.TB, waitUntil time.Time) (agenttools.Chat, conversations.ToolCaller) {
	tb.Helper()
	conv, err := conversations.MustNew(conversations.Config{Store: f.store, Agents: f.store, Router: &cascade.Router{}}).Create(context.Background(), team, conversations.CreateInput{Title: "chat", Agent: "kyra"})
	require.NoError(tb, err)
	chat := agenttools.Chat{Tools: f.tools}
	return chat, conversations.ToolCaller{TeamID: team, ConversationID: conv.ID, Agent: "kyra", WaitUntil: waitUntil, Offered: chat.Specs(agents.Agent{Slug: "kyra"})}
}

var delegateCall = models.ToolCall{ID: "call-1", Name: "delegate_task", Input: `{"to_agent":"luke","title":"Review the parser","instructions":"Review the parser"}`}

// A delegation a chat reply waits for that outlasts the reply's time goes
// on: the task is released to the conversation (its result will be
// posted there, not carried by the reply), the tool answers that it is
// still running, and the reply lists it as pending.
func TestAChatDelegationThatOutlastsTheTurnIsReleasedToTheConversation(t *testing.T) {
	f := newFixture(t)
	chat, who := f.chatCaller(t, time.Now().Add(100*time.Millisecond))
	// No workflow runs the child (Workflows is nil): it never ends.
	res, err := chat.Call(context.Background(), who, delegateCall)
	require.NoError(t, err)

	require.NotNil(t, res.Pending, res.Text)
	assert.Nil(t, res.Delivered, "the reply does not carry its result")
	child, err := f.tasks.Get(context.Background(), team, res.Pending.ID)
	require.NoError(t, err)
	assert.Equal(t, conversations.WorkRef{Type: "task", ID: child.ID, Agent: "luke", Status: string(tasks.Queued)}, *res.Pending)
	assert.Equal(t, who.ConversationID, child.ConversationID)
	assert.Equal(t, tasks.DeliverToConversation, child.ResultDelivery, "released: the result-poster posts it when it ends")
	assert.Equal(t, fmt.Sprintf("task %s (luke) is still running; its result will be posted in this conversation when it is done. Tell the user.", child.ID), res.Text)
}

// A child that ends while the reply waits is the tool's result: the reply
// carries it (Delivered) and nothing is released to the conversation.
func TestAChatDelegationThatEndsInTimeIsTheToolsResult(t *testing.T) {
	f := newFixture(t)
	chat, who := f.chatCaller(t, time.Now().Add(20*time.Second))
	ctx := context.Background()
	go func() {
		// Luke takes the task as soon as it exists and completes it.
		for range 100 {
			time.Sleep(20 * time.Millisecond)
			children, _, err := f.tasks.List(ctx, team, tasks.Filter{Assignee: "luke"}, paging.Page{Limit: 10})
			if err != nil || len(children) == 0 {
				continue
			}
			id := children[0].ID
			if _, err := f.tasks.Start(ctx, team, id, "agent:luke"); err == nil {
				_, _ = f.tasks.Complete(ctx, team, id, "agent:luke", "two issues found", nil)
			}
			return
		}
	}()
	res, err := chat.Call(ctx, who, delegateCall)
	require.NoError(t, err)
	require.NotNil(t, res.Delivered, res.Text)
	assert.Nil(t, res.Pending)
	assert.Equal(t, "completed", res.Delivered.Status)
	assert.Equal(t, "task "+res.Delivered.ID+" by luke completed: two issues found", res.Text)
	child, err := f.tasks.Get(ctx, team, res.Delivered.ID)
	require.NoError(t, err)
	assert.Equal(t, tasks.DeliverInReply, child.ResultDelivery, "not released: only the reply delivers it")
}

// chatPolicy is a fixed approval policy.
type chatPolicy approvals.Policy

func (p chatPolicy) Policy(context.Context, string) (approvals.Policy, error) {
	return approvals.Policy(p), nil
}

// A chat call the policy gates does not run: a task of the same agent,
// linked to the conversation, holds it for the approval (its execution
// waits for the decision and finishes the reply), and the reply lists the
// approval and the task as pending.
func TestAGatedChatCallIsHeldInATaskThatFinishesTheReply(t *testing.T) {
	f := newFixture(t)
	f.tools.Approvals = chatPolicy{Tools: []string{"delegate_task"}, ExpirySeconds: 120}
	chat, who := f.chatCaller(t, time.Now().Add(time.Second))
	who.Messages = []models.Message{{Role: "user", Content: "Have luke review the parser"}}
	res, err := chat.Call(context.Background(), who, delegateCall)
	require.NoError(t, err)

	require.NotNil(t, res.Approval, res.Text)
	require.NotNil(t, res.Pending, res.Text)
	assert.Equal(t, conversations.WorkApproval, res.Approval.Type)
	assert.Equal(t, "pending", res.Approval.Status)
	assert.Contains(t, res.Text, `"status":"awaiting_approval"`)
	assert.Contains(t, res.Text, res.Approval.ID)

	held, err := f.tasks.Get(context.Background(), team, res.Pending.ID)
	require.NoError(t, err)
	assert.Equal(t, "kyra", held.Assignee, "the agent finishes its own reply")
	assert.Equal(t, tasks.Creator{Type: "agent", ID: "kyra"}, held.CreatedBy)
	assert.Equal(t, 0, held.Depth, "a continuation, not a delegation")
	assert.Equal(t, who.ConversationID, held.ConversationID)
	assert.Equal(t, tasks.DeliverToConversation, held.ResultDelivery, "its answer is posted in the conversation")
	assert.Contains(t, held.Instructions, "Have luke review the parser")
	assert.Contains(t, held.Context, "user: Have luke review the parser")
	require.NotNil(t, held.HeldCall)
	assert.Equal(t, workflow.ApprovalWait{ApprovalID: res.Approval.ID, CallID: "call-1", Tool: "delegate_task",
		Arguments: json.RawMessage(delegateCall.Input), Agent: "kyra", Reasons: []string{approvals.ReasonPolicyTool},
		EstimatedCostUSD: tasks.DefaultCostCapUSD, TimeoutSeconds: 120, ConversationID: who.ConversationID}, *held.HeldCall)
	luke, _, err := f.tasks.List(context.Background(), team, tasks.Filter{Assignee: "luke"}, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, luke, "the held delegation was not made")
}

// What cannot be held is refused with a tool error and creates nothing:
// arguments the schema refuses (the model fixes them now), and a tool
// that runs in a chat reply only (handoff_to: no task can run it later).
func TestAGatedChatCallThatCannotBeHeldIsRefused(t *testing.T) {
	f := newFixture(t)
	f.tools.Approvals = chatPolicy{Tools: []string{"delegate_task", "handoff_to"}}
	chat, who := f.chatCaller(t, time.Now().Add(time.Second))

	bad, err := chat.Call(context.Background(), who, models.ToolCall{ID: "c1", Name: "delegate_task", Input: `{"to_agent":"luke"}`})
	require.NoError(t, err)
	assert.Contains(t, bad.Text, "instructions", "the field to fix")
	assert.Nil(t, bad.Approval)

	ho, err := chat.Call(context.Background(), who, models.ToolCall{ID: "c2", Name: "handoff_to", Input: `{"to_agent":"luke","reason":"code"}`})
	require.NoError(t, err)
	assert.Contains(t, ho.Text, agenttools.ApprovalRequired)
	assert.Contains(t, ho.Text, "runs in a chat reply only")
	assert.Nil(t, ho.Handoff, "not handed over")
	assert.Nil(t, ho.Pending)

	kyra, _, err := f.tasks.List(context.Background(), team, tasks.Filter{Assignee: "kyra"}, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, kyra, "nothing was held")
}
