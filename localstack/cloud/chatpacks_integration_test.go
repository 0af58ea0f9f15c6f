//go:build integration

package cloud_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chatOrders begins the orders the chat tests ask the package's MCP
// server for (startMCPServer): the task tests count their own calls
// without them (mcpServer.callsExcept).
const chatOrders = "CHAT-"

// A skill names the team's MCP pack (skills[].packs): one the team does
// not have is a 400 naming the field and stores nothing; the agent's chat
// tools list the pack's tools; in a chat turn through the real API the
// agent calls the pack's tool on the Python SDK's server (validated
// arguments, the credential sent, the answer fenced as untrusted data),
// and the reply lists the call. A pack the turn adds with
// request_tool_pack is called from its next step.
func TestAChatReplyCallsTheMCPPackItsSkillNames(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	srv := startMCPServer(t)
	st, res := d.call("PUT", "/v1/tool-packs/crm", map[string]any{"url": srv.url, "credential": srv.token})
	require.Equal(t, 201, st, res)

	agent := func(packs ...string) map[string]any {
		return map[string]any{"slug": "orders", "name": "Orders", "skills": []any{
			map[string]any{"name": "orders", "description": "answers questions on orders", "packs": packs}}}
	}
	st, res = d.call("POST", "/v1/agents", agent("crm", "erp"))
	require.Equal(t, 400, st, res)
	assert.Equal(t, "skills[0].packs", res["error"].(map[string]any)["field"])
	st, _ = d.call("GET", "/v1/agents/orders", nil)
	assert.Equal(t, 404, st, "nothing stored")
	st, res = d.call("POST", "/v1/agents", agent("crm"))
	require.Equal(t, 201, st, res)
	assert.Equal(t, []any{"crm"}, res["skills"].([]any)[0].(map[string]any)["packs"])

	st, offered := d.call("GET", "/v1/agents/orders/tools", nil)
	require.Equal(t, 200, st, offered)
	var names []string
	for _, tool := range offered["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	assert.Contains(t, names, "crm__lookup_order")
	assert.Contains(t, names, "request_tool_pack")

	conv := d.conversation("orders")
	r := lastReply(t, d.post(conv, map[string]any{"content": `@orders [call:crm__lookup_order {"order_id":"CHAT-1"}] Where is order CHAT-1?`}))
	assert.Equal(t, "orders", r["agent"])
	assert.Equal(t, []string{"crm__lookup_order"}, toolNames(r))
	assert.Contains(t, r["content"], "ACME Freight", "the server's answer is the reply's")
	assert.Contains(t, r["content"], `trust="untrusted"`)
	var got []map[string]any
	for _, c := range srv.calls(t) {
		if args, _ := c["arguments"].(map[string]any); args["order_id"] == "CHAT-1" {
			got = append(got, c)
		}
	}
	require.Len(t, got, 1)
	assert.Equal(t, "lookup_order", got[0]["tool"])
	assert.Equal(t, "Bearer "+srv.token, got[0]["authorization"])

	// kyra's skills name no pack: she asks for it, then calls its tool.
	kyra := d.conversation("kyra")
	r = lastReply(t, d.post(kyra, map[string]any{"content": `@kyra [request-pack:crm] [call:crm__lookup_order {"order_id":"CHAT-2"}] and CHAT-2?`}))
	assert.Equal(t, "kyra", r["agent"])
	assert.Equal(t, []string{"request_tool_pack", "crm__lookup_order"}, toolNames(r))
	assert.Contains(t, r["content"], "CHAT-2")
	assert.Contains(t, r["content"], "ACME Freight")
}
