package agenttools_test

import (
	"context"
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
	"github.com/conclave-ai/conclave/shared/tools/catalog"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/wire/localmodelwiring"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// ordersAgent creates "orders", whose orders skill names the team's MCP
// pack crm (mcpFixture), and returns it as the store has it.
func ordersAgent(t *testing.T, f *fixture) agents.Agent {
	t.Helper()
	svc := agents.NewService(f.store)
	svc.Packs = f.tools.MCPPacks
	a, err := svc.Create(context.Background(), team, agents.CreateInput{Slug: "orders", Name: "Orders", Skills: []agents.Skill{
		{Name: "general", Description: "answers general questions"},
		{Name: "orders", Description: "answers questions on orders", Packs: []string{"crm"}},
	}})
	require.NoError(t, err)
	return a
}

// A chat reply whose agent's skill names an MCP pack is offered the
// pack's tools and calls them through the real tool loop
// (conversations.Service with the Chat tools and the local model): the
// arguments checked against the server's schema, the answer fenced as
// untrusted data, the call listed on the reply. GET
// /v1/agents/{slug}/tools shows the same tools.
func TestAChatReplyCallsTheMCPPackItsSkillNames(t *testing.T) {
	f, srv := mcpFixture(t)
	ctx := context.Background()
	orders := ordersAgent(t, f)
	chat := agenttools.Chat{Tools: f.tools}

	offered := chat.Augment(ctx, team, orders, chat.Specs(orders), orders.Packs())
	assert.Contains(t, names(offered), "crm__lookup_order")
	scoped, _ := orders.WithSkill("general")
	assert.NotContains(t, names(chat.Augment(ctx, team, scoped, chat.Specs(scoped), scoped.Packs())), "crm__lookup_order", "another skill's pack")
	listed, err := agenttools.Lister{Agents: f.store, Chat: chat, Task: f.tools}.Offered(ctx, team, "orders", catalog.ContextChat, "")
	require.NoError(t, err)
	assert.Equal(t, names(offered), offeredNames(listed), "what GET /v1/agents/{slug}/tools shows")

	svc := conversations.MustNew(conversations.Config{Store: f.store, Agents: f.store, Router: &cascade.Router{}, Model: localmodelwiring.New(f.store), Tools: chat})
	conv, err := svc.Create(ctx, team, conversations.CreateInput{Title: "orders", Agent: "orders"})
	require.NoError(t, err)
	res, err := svc.Post(ctx, team, conv.ID, conversations.PostInput{Content: `[call:crm__lookup_order {"order_id":"A-17"}] Where is order A-17?`})
	require.NoError(t, err)
	r := res.Replies[len(res.Replies)-1]
	require.Equal(t, "orders", r.Agent)
	require.Len(t, r.ToolCalls, 1, r.Content)
	assert.Equal(t, "crm__lookup_order", r.ToolCalls[0].Tool)
	assert.Contains(t, r.ToolCalls[0].Output, `trust="untrusted"`)
	assert.Contains(t, r.Content, "shipped")
	assert.Equal(t, []string{`lookup_order {"order_id":"A-17"}`}, srv.calls)

	// Arguments the server's schema refuses never reach it.
	res, err = svc.Post(ctx, team, conv.ID, conversations.PostInput{Content: `[call:crm__lookup_order {"order_id":17}] and 17?`})
	require.NoError(t, err)
	assert.Contains(t, res.Replies[len(res.Replies)-1].ToolCalls[0].Output, "invalid_arguments")
	assert.Len(t, srv.calls, 1)
}

// Chat.Call runs a pack's tool only when the reply was given it, and
// request_tool_pack adds a pack for the rest of the reply: the result
// names it and carries the reply's tools with its own.
func TestAChatReplyAsksForAPack(t *testing.T) {
	f, srv := mcpFixture(t)
	ctx := context.Background()
	chat, who := f.chatCaller(t, time.Now().Add(time.Second))
	who.TokensLeft = workflow.MaxTaskTokens
	require.Contains(t, names(who.Offered), catalog.RequestToolPack)

	res, err := chat.Call(ctx, who, models.ToolCall{ID: "c1", Name: "crm__lookup_order", Input: `{"order_id":"A-17"}`})
	require.NoError(t, err)
	assert.Equal(t, "tool crm__lookup_order is not available to you", res.Text, "not given: not run")
	assert.Empty(t, srv.calls)

	res, err = chat.Call(ctx, who, models.ToolCall{ID: "c2", Name: "request_tool_pack", Input: `{"pack":"crm","reason":"an order question"}`})
	require.NoError(t, err)
	assert.Equal(t, "added tool pack crm for the rest of this reply: crm__lookup_order", res.Text)
	assert.Equal(t, "crm", res.Pack)
	assert.Equal(t, append(names(who.Offered), "crm__lookup_order"), names(res.Offered))

	who.Offered, who.Packs = res.Offered, []string{res.Pack}
	res, err = chat.Call(ctx, who, models.ToolCall{ID: "c3", Name: "crm__lookup_order", Input: `{"order_id":"A-17"}`})
	require.NoError(t, err)
	assert.Contains(t, res.Text, "shipped")
	assert.Len(t, srv.calls, 1)

	res, err = chat.Call(ctx, who, models.ToolCall{ID: "c4", Name: "request_tool_pack", Input: `{"pack":"orders"}`})
	require.NoError(t, err)
	assert.Contains(t, res.Text, "there is no tool pack orders")
	assert.Empty(t, res.Pack)
	assert.Nil(t, res.Offered)
}

// A bridging call of a chat reply charges what is left of the turn's
// tokens (ToolCaller.TokensLeft): it says what it used, and is refused
// before the model is asked when too little is left.
func TestAChatBridgingCallSaysWhatItUsed(t *testing.T) {
	m := &scriptedModel{text: "a short summary", in: 300, out: 40}
	f := bridgingFixture(t, m)
	chat, who := f.chatCaller(t, time.Now().Add(time.Second))
	who.Offered = append(who.Offered, agenttools.Chat{Tools: f.tools}.PackSpecs(context.Background(), team, agents.Agent{}, []string{toolpacks.Bridging})...)
	who.TokensLeft = 3000
	res, err := chat.Call(context.Background(), who, models.ToolCall{ID: "c1", Name: "summarize_text", Input: `{"text":"the parser drops the last token"}`})
	require.NoError(t, err)
	assert.Equal(t, "a short summary", res.Text)
	assert.Equal(t, 340, res.Tokens)
	assert.Positive(t, res.CostUSD)

	who.TokensLeft = 100
	res, err = chat.Call(context.Background(), who, models.ToolCall{ID: "c2", Name: "summarize_text", Input: `{"text":"x"}`})
	require.NoError(t, err)
	assert.Equal(t, "rejected (BudgetExceeded): not enough of the reply's token budget is left for this call", res.Text)
	assert.Zero(t, res.Tokens)
	assert.Len(t, m.requests, 1, "no model call made")
}

// A pack's tool is gated by the approval policy in a chat reply as in a
// task: the call is held in a task of the agent given that pack (its
// worker runs the call once a human decides), and nothing reaches the
// server meanwhile.
func TestAGatedPackCallIsHeldInATaskGivenThePack(t *testing.T) {
	f, srv := mcpFixture(t)
	ctx := context.Background()
	orders := ordersAgent(t, f)
	f.tools.Approvals = chatPolicy{Agents: []string{"orders"}, ExpirySeconds: 60}
	chat, who := f.chatCaller(t, time.Now().Add(time.Second))
	who.Agent, who.Skills, who.Packs = "orders", orders.Skills, orders.Packs()
	who.Offered = chat.Augment(ctx, team, orders, chat.Specs(orders), who.Packs)

	bad, err := chat.Call(ctx, who, models.ToolCall{ID: "c0", Name: "crm__lookup_order", Input: `{"order_id":17}`})
	require.NoError(t, err)
	assert.Contains(t, bad.Text, "invalid_arguments", "the model fixes its arguments now")
	assert.Nil(t, bad.Approval)

	res, err := chat.Call(ctx, who, models.ToolCall{ID: "c1", Name: "crm__lookup_order", Input: `{"order_id":"A-17"}`})
	require.NoError(t, err)
	require.NotNil(t, res.Approval, res.Text)
	require.NotNil(t, res.Pending)
	assert.Empty(t, srv.calls, "not run before a human decides")
	held, err := f.tasks.Get(ctx, team, res.Pending.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{"crm"}, held.ToolPacks, "the task that finishes the reply has the pack")
	require.NotNil(t, held.HeldCall)
	assert.Equal(t, "crm__lookup_order", held.HeldCall.Tool)
	assert.Equal(t, []string{approvals.ReasonPolicyAgent}, held.HeldCall.Reasons)
	list, _, err := f.tasks.List(ctx, team, tasks.Filter{Assignee: "orders"}, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Len(t, list, 1)
}
