package conversations_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// packTools are fakeTools that give the tools of packs (packs, by name),
// recording what each reply asked for.
type packTools struct {
	*fakeTools
	packs map[string][]models.Tool
	pmu   sync.Mutex
	// augmented are the packs each Augment was asked for, with the agent
	// it was asked for.
	augmented [][]string
	agents    []agents.Agent
}

var _ conversations.PackTools = (*packTools)(nil)

func (p *packTools) Augment(_ context.Context, teamID string, a agents.Agent, tools []models.Tool, packs []string) []models.Tool {
	p.pmu.Lock()
	defer p.pmu.Unlock()
	p.augmented, p.agents = append(p.augmented, packs), append(p.agents, a)
	out := slices.Clone(tools)
	for _, name := range packs {
		out = append(out, p.packs[name]...)
	}
	return out
}

// anyPack lets a skill name any pack (the team's MCP packs are the
// agents function's to read).
type anyPack struct{}

func (anyPack) Exists(context.Context, string, string) (bool, error) { return true, nil }

// A reply is given the tools of the packs its answering skill names: an
// agent a skill match chose, that skill's packs only; one a mention chose,
// every skill's. The model is offered them and the reply calls them.
func TestAReplyIsOfferedThePacksItsSkillNames(t *testing.T) {
	m := &toolModel{tokens: 20, plan: []models.ToolCall{{ID: "1", Name: "crm__lookup_order", Input: `{"order_id":"A-17"}`}}}
	tools := &packTools{fakeTools: &fakeTools{specs: spec("get_agent_inbox"),
		answers: map[string]conversations.ToolResult{"crm__lookup_order": {Text: "shipped by ACME"}}},
		packs: map[string][]models.Tool{"crm": spec("crm__lookup_order"), "bridging": spec("summarize_text")}}
	f := newFixture(t, collaborationOn)
	f.cfg.Model, f.cfg.Tools = m, tools
	f.rebuild()
	ctx := context.Background()
	luke, err := f.store.GetAgent(ctx, team, "luke")
	require.NoError(t, err)
	skills := slices.Clone(luke.Skills)
	skills[0].Packs = []string{"crm"}
	skills = append(skills, agents.Skill{Name: "release-notes", Description: "Draft changelogs for a release", Packs: []string{"bridging"}})
	svc := &agents.Service{Store: f.store, Now: f.store.Now, Packs: anyPack{}}
	_, err = svc.Update(ctx, team, "luke", agents.UpdateInput{Skills: &skills})
	require.NoError(t, err)

	c := f.create(t, "kyra")
	res := f.post(t, c.ID, "Can you review this Go function for bugs?")
	r := reply(t, res)
	require.Equal(t, "luke", r.Agent)
	require.Equal(t, "code-review", res.Routing.Skill)
	require.NotEmpty(t, tools.augmented)
	assert.Equal(t, []string{"crm"}, tools.augmented[len(tools.augmented)-1], "the matched skill's packs alone")
	assert.Equal(t, []string{"get_agent_inbox", "crm__lookup_order"}, toolNames(m.requests[0].Tools), "offered to the model")
	require.Len(t, r.ToolCalls, 1)
	assert.Equal(t, conversations.ToolUse{Tool: "crm__lookup_order", Input: `{"order_id":"A-17"}`, Output: "shipped by ACME"}, r.ToolCalls[0])
	assert.Equal(t, "answer after: shipped by ACME", r.Content)
	last := tools.calls[len(tools.calls)-1]
	assert.Equal(t, []string{"crm"}, last.Packs, "the tool caller knows the reply's packs (a held call's task gets them)")
	assert.Contains(t, toolNames(last.Offered), "crm__lookup_order")

	f.post(t, c.ID, "@luke and what about the tests?")
	assert.Equal(t, []string{"crm", "bridging"}, tools.augmented[len(tools.augmented)-1], "a mention matched no skill: every skill's packs")
}

// request_tool_pack adds a pack's tools to the reply from the model's
// next step; a call of a pack's tool is one of the turn's tool calls,
// counted against its budget like any other.
func TestAPackAddedMidReplyIsOfferedAndItsCallsCount(t *testing.T) {
	plan := []models.ToolCall{{ID: "p", Name: "request_tool_pack", Input: `{"pack":"crm"}`}}
	for i := range 12 {
		plan = append(plan, models.ToolCall{ID: fmt.Sprint(i), Name: "crm__lookup_order", Input: `{"order_id":"A-17"}`})
	}
	m := &toolModel{tokens: 10, plan: plan}
	offered := spec("get_agent_inbox", "request_tool_pack")
	tools := &fakeTools{specs: offered, answers: map[string]conversations.ToolResult{
		"request_tool_pack": {Text: "added tool pack crm for the rest of this reply: crm__lookup_order", Pack: "crm",
			Offered: append(slices.Clone(offered), spec("crm__lookup_order")...)},
		"crm__lookup_order": {Text: "shipped"},
	}}
	f := toolFixture(t, m, tools)
	r := reply(t, f.post(t, f.create(t, "kyra").ID, "where is my order?"))

	assert.Equal(t, []string{"get_agent_inbox", "request_tool_pack"}, toolNames(m.requests[0].Tools))
	assert.Equal(t, []string{"get_agent_inbox", "request_tool_pack", "crm__lookup_order"}, toolNames(m.requests[1].Tools), "from the next step")
	require.Len(t, tools.calls, workflow.MaxTaskToolCalls, "the pack's request and its tool's calls share the turn's ten")
	assert.Equal(t, "crm__lookup_order", tools.names[1])
	assert.Equal(t, []string{"crm"}, tools.calls[1].Packs)
	assert.Contains(t, toolNames(tools.calls[1].Offered), "crm__lookup_order", "what the reply may run")
	assert.Equal(t, conversations.StoppedToolCalls, r.Stopped)
	assert.Contains(t, r.ToolCalls[workflow.MaxTaskToolCalls].Output, "not run")
}

// twoCalls asks for both of its calls in its first response, then
// answers; each response reports tokens tokens.
type twoCalls struct {
	calls    []models.ToolCall
	tokens   int
	requests []models.Request
}

func (m *twoCalls) Converse(_ context.Context, req models.Request) (models.Response, error) {
	m.requests = append(m.requests, req)
	resp := models.Response{InputTokens: m.tokens, ModelID: "test-model"}
	if len(m.requests) == 1 {
		resp.ToolCalls = m.calls
		return resp, nil
	}
	resp.Text = "done"
	return resp, nil
}

// A tool's own model calls (a bridging tool's) count in the turn's token
// budget: a call that spends the rest of it stops the loop, no model is
// asked again, and the next call of the response is not run.
func TestABridgingCallsTokensCountInTheTurnsBudget(t *testing.T) {
	m := &twoCalls{tokens: 20, calls: []models.ToolCall{{ID: "1", Name: "summarize_text", Input: `{"text":"a long log"}`}, {ID: "2", Name: "get_agent_inbox", Input: `{}`}}}
	tools := &fakeTools{specs: spec("summarize_text", "get_agent_inbox"),
		answers: map[string]conversations.ToolResult{"summarize_text": {Text: "a summary", Tokens: workflow.MaxTaskTokens - 20}}}
	f := twoCallsFixture(t, m, tools)
	r := reply(t, f.post(t, f.create(t, "kyra").ID, "summarize the logs"))

	require.Len(t, tools.calls, 1, "the second call is not run")
	assert.Equal(t, workflow.MaxTaskTokens-20, tools.calls[0].TokensLeft, "the tool is told what the turn has left")
	assert.Len(t, m.requests, 1, "no model is asked once the tokens are spent")
	assert.Equal(t, conversations.StoppedTokens, r.Stopped)
	require.Len(t, r.ToolCalls, 2)
	assert.Equal(t, "a summary", r.ToolCalls[0].Output)
	assert.Contains(t, r.ToolCalls[1].Output, "not run")
	assert.Contains(t, r.Content, "budget of 4000 tokens")

	// Below the budget the loop goes on, and the next tool is told less.
	m = &twoCalls{tokens: 20, calls: m.calls}
	tools = &fakeTools{specs: spec("summarize_text", "get_agent_inbox"),
		answers: map[string]conversations.ToolResult{"summarize_text": {Text: "a summary", Tokens: 500}}}
	f = twoCallsFixture(t, m, tools)
	r = reply(t, f.post(t, f.create(t, "kyra").ID, "summarize the logs"))
	require.Len(t, tools.calls, 2)
	assert.Equal(t, workflow.MaxTaskTokens-20-500, tools.calls[1].TokensLeft)
	assert.Len(t, m.requests, 2)
	assert.Empty(t, r.Stopped)
}

func twoCallsFixture(t *testing.T, m *twoCalls, tools *fakeTools) *fixture {
	f := newFixture(t, collaborationOff)
	f.cfg.Model, f.cfg.Tools = m, tools
	f.rebuild()
	return f
}

func toolNames(tools []models.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}
