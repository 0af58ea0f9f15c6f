//go:build integration

package cloud_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
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

	// Idempotency: a create with skills[].packs sent twice with one
	// Idempotency-Key answers the first response again and stores one
	// agent; an update sent twice leaves the agent as the first made it.
	body := map[string]any{"slug": "ledger", "name": "Ledger", "skills": []any{
		map[string]any{"name": "ledger", "description": "answers questions on invoices", "packs": []string{"crm"}}}}
	first := d.do("POST", "/v1/agents", body, "Idempotency-Key", "ledger-create")
	require.Equal(t, 201, first.Status, string(first.Body))
	again := d.do("POST", "/v1/agents", body, "Idempotency-Key", "ledger-create")
	assert.Equal(t, 201, again.Status, string(again.Body))
	assert.Equal(t, first.Body, again.Body, "the first response")
	assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	st, list := d.call("GET", "/v1/agents", nil)
	require.Equal(t, 200, st, list)
	ledgers := 0
	for _, a := range list["items"].([]any) {
		if a.(map[string]any)["slug"] == "ledger" {
			ledgers++
		}
	}
	assert.Equal(t, 1, ledgers, "one agent stored")
	created := first.JSON(t)
	update := map[string]any{"skills": []any{
		map[string]any{"name": "ledger", "description": "answers questions on invoices", "packs": []string{"crm", "memory"}}}}
	first = d.do("PATCH", "/v1/agents/ledger", update, "Idempotency-Key", "ledger-update")
	require.Equal(t, 200, first.Status, string(first.Body))
	again = d.do("PATCH", "/v1/agents/ledger", update, "Idempotency-Key", "ledger-update")
	require.Equal(t, 200, again.Status, string(again.Body))
	assert.Equal(t, first.Body, again.Body, "the same agent, not updated twice")
	updated := again.JSON(t)
	assert.Equal(t, created["version"].(float64)+1, updated["version"], "one update")
	assert.Equal(t, []any{"crm", "memory"}, updated["skills"].([]any)[0].(map[string]any)["packs"])
}

// A bridging call of a chat reply (the bridging pack its skill names) is
// made within what is left of the turn's token budget: after a first
// model call that read a long message, the tool is told the rest, so the
// text it bridges is clipped to fit it, where a call given a whole
// call's share (2,000 tokens) would have bridged it whole; and what the
// bridging model call cost is the reply's, beside its own model calls'.
func TestAChatReplysBridgingCallFitsWhatIsLeftOfTheTurn(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	st, res := d.call("POST", "/v1/agents", map[string]any{"slug": "scribe", "name": "Scribe", "skills": []any{
		map[string]any{"name": "notes", "description": "summarizes the team's notes", "packs": []string{"bridging"}}}})
	require.Equal(t, 201, st, res)

	// About 930 tokens to summarize (models.EstimateTokens: 4 per 3
	// words), below a call's 2,000; the message around it brings the
	// first model call to about 2,700 tokens of the turn's 4,000.
	text := strings.TrimSpace(strings.Repeat("b ", 700))
	padding := strings.TrimSpace(strings.Repeat("a ", 1330))
	conv := d.conversation("scribe")
	r := lastReply(t, d.post(conv, map[string]any{"content": "@scribe " + padding + ` [call:summarize_text {"text":"` + text + `"}]`}))
	require.Equal(t, []string{"summarize_text"}, toolNames(r), r)
	out := r["tool_calls"].([]any)[0].(map[string]any)["output"].(string)
	assert.Contains(t, out, "clipped to fit the reply's token budget", "the call was told what the turn has left: %s", out)
	assert.NotContains(t, out, "BudgetExceeded", "enough was left for the call")

	in, _ := r["input_tokens"].(float64)
	outToks, _ := r["output_tokens"].(float64)
	own := models.Cost(r["model_id"].(string), int(in), int(outToks))
	cost, _ := r["cost_usd"].(float64)
	assert.Greater(t, cost, own+1e-9, "the bridging call's cost is the reply's (%v tokens in, %v out, model %v)", in, outToks, r["model_id"])
}
