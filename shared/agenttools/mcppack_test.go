package agenttools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/shared/work/worker"
)

// serverStub is an MCP server's answers, recording the calls it gets.
type serverStub struct{ calls []string }

func (s *serverStub) ListTools(context.Context, toolpacks.Conn) ([]toolpacks.MCPTool, error) {
	return []toolpacks.MCPTool{{Name: "lookup_order", Description: "Look up an order",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string","minLength":1}},"required":["order_id"],"additionalProperties":false}`)}}, nil
}

func (s *serverStub) CallTool(_ context.Context, _ toolpacks.Conn, tool string, args json.RawMessage) (toolpacks.CallResult, error) {
	s.calls = append(s.calls, tool+" "+string(args))
	return toolpacks.CallResult{Text: "shipped"}, nil
}

type noSecrets struct{}

func (noSecrets) PutSecret(context.Context, string, string) error   { return nil }
func (noSecrets) GetSecret(context.Context, string) (string, error) { return "", nil }
func (noSecrets) DeleteSecret(context.Context, string) error        { return nil }

func mcpFixture(t *testing.T) (*fixture, *serverStub) {
	f := newFixture(t)
	srv := &serverStub{}
	reg := &toolpacks.Registry{Store: f.store, Secrets: noSecrets{}, MCP: srv, Policy: toolpacks.NetPolicy{LoopbackOnly: true}}
	f.tools.MCPPacks = reg
	f.tasks.Packs = reg
	_, _, err := reg.Put(context.Background(), team, "key_1", "crm", toolpacks.MCPPackInput{URL: "http://127.0.0.1:9/mcp"})
	require.NoError(t, err)
	return f, srv
}

// An MCP pack's tools are offered to a task given the pack, with the
// server's schema; a call is checked against that schema before anything
// is sent, and its answer comes back fenced as untrusted data.
func TestMCPPackToolsAreOfferedAndCheckedBeforeTheyAreCalled(t *testing.T) {
	f, srv := mcpFixture(t)
	ctx := context.Background()
	specs := f.tools.PackSpecs(ctx, team, agents.Agent{Slug: "kyra"}, []string{"crm", "memory"})
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"search_memories", "share_memory", "crm__lookup_order"}, names)
	assert.Equal(t, []any{"order_id"}, specs[2].Schema["required"])
	assert.Empty(t, f.tools.PackSpecs(ctx, "team_other", agents.Agent{Slug: "kyra"}, []string{"crm"}), "another team's pack")

	p := f.working(t, "kyra")
	for _, bad := range []string{`{"order_id":5}`, `{}`, `{"order_id":""}`, `{"order_id":"A","x":1}`, `[1]`, `not json`} {
		out := f.call(t, p, "crm__lookup_order", bad)
		assert.Contains(t, out, "invalid_arguments", bad)
	}
	assert.Empty(t, srv.calls, "nothing reached the server")
	out := f.call(t, p, "crm__lookup_order", `{"order_id":"A-17"}`)
	assert.Contains(t, out, "shipped")
	assert.Contains(t, out, `trust="untrusted"`)
	assert.Equal(t, []string{`lookup_order {"order_id":"A-17"}`}, srv.calls)
	assert.Contains(t, f.call(t, p, "crm__nope", `{}`), "no longer lists it")
	assert.Contains(t, f.call(t, p, "gone__lookup_order", `{}`), "is gone")
}

// A task names the team's MCP pack like a built-in one; a pack the team
// does not have is refused naming tool_packs; request_tool_pack adds one.
func TestTasksNameTheTeamsMCPPacks(t *testing.T) {
	f, _ := mcpFixture(t)
	ctx := context.Background()
	tk, err := f.tasks.Create(ctx, team, tasks.Creator{Type: "user", ID: "k"}, tasks.CreateInput{Assignee: "kyra", Title: "x", ToolPacks: []string{"crm", "bridging"}}, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"crm", "bridging"}, tk.ToolPacks)
	_, err = f.tasks.Create(ctx, team, tasks.Creator{Type: "user", ID: "k"}, tasks.CreateInput{Assignee: "kyra", Title: "x", ToolPacks: []string{"orders"}}, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tool_packs")

	p := f.working(t, "kyra")
	_, err = f.tools.Call(ctx, p, models.ToolCall{ID: "c1", Name: "request_tool_pack", Input: `{"pack":"crm"}`})
	var add worker.AddPack
	require.ErrorAs(t, err, &add)
	assert.Equal(t, "crm", add.Pack)
	assert.Contains(t, add.Output, "crm__lookup_order")
	assert.Contains(t, f.call(t, p, "request_tool_pack", `{"pack":"orders"}`), "there is no tool pack orders")
}
