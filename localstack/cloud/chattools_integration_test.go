//go:build integration

// Tools in chat replies against the local cloud: the conversations
// function's agents delegate (the delegation machine runs the child),
// request reports, start sessions, message colleagues and hand the
// conversation over from their replies; work that outlives the reply is
// posted into the conversation by the result-poster consumer, and a chat
// client long-polls for it.
package cloud_test

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/wire/conversationsfn"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// agentReply is the agent's reply of a turn (a handoff's note may follow
// it).
func agentReply(t *testing.T, turn map[string]any) map[string]any {
	t.Helper()
	for _, it := range turn["replies"].([]any) {
		if m := it.(map[string]any); m["role"] == "assistant" {
			return m
		}
	}
	t.Fatalf("no agent reply in %v", turn)
	return nil
}

// toolNames are the tools a reply called, in order.
func toolNames(reply map[string]any) []string {
	var out []string
	calls, _ := reply["tool_calls"].([]any)
	for _, c := range calls {
		out = append(out, c.(map[string]any)["tool"].(string))
	}
	return out
}

// task reads a task of the team.
func (d demoTeam) task(id string) map[string]any {
	d.t.Helper()
	st, tk := d.call("GET", "/v1/tasks/"+id, nil)
	require.Equal(d.t, 200, st, tk)
	return tk
}

// tasksOf lists the team's tasks assigned to slug.
func (d demoTeam) tasksOf(slug string) []map[string]any {
	d.t.Helper()
	st, list := d.call("GET", "/v1/tasks?assignee="+slug+"&limit=50", nil)
	require.Equal(d.t, 200, st, list)
	var out []map[string]any
	for _, it := range list["items"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

// awaitPosted long-polls the conversation's messages after the message id
// after until one whose result_of names the work id arrives (pollResult),
// as a chat client would.
func (d demoTeam) awaitPosted(conv, after, id string) map[string]any {
	d.t.Helper()
	m, _ := d.pollResult(conv, after, id)
	return m
}

// messages lists the conversation's messages, oldest first.
func (d demoTeam) messages(conv string) []map[string]any {
	d.t.Helper()
	st, page := d.call("GET", "/v1/conversations/"+conv+"/messages?limit=100", nil)
	require.Equal(d.t, 200, st, page)
	var out []map[string]any
	for _, it := range page["items"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

// lastID is the id of the conversation's newest message: where a client
// that has read everything would long-poll from.
func (d demoTeam) lastID(conv string) string {
	d.t.Helper()
	st, page := d.call("GET", "/v1/conversations/"+conv+"/messages?limit=100", nil)
	require.Equal(d.t, 200, st, page)
	items := page["items"].([]any)
	require.NotEmpty(d.t, items)
	return items[len(items)-1].(map[string]any)["id"].(string)
}

// A reply that delegates and waits: the child task is linked to the
// conversation, run by the delegation machine, and its result is in the
// reply; nothing is posted for it afterwards (the reply delivered it).
func TestChatReplyDelegatesAndWaits(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "kyra", "delegate:luke")
	conv := d.conversation("kyra")
	turn := d.post(conv, map[string]any{"content": "@kyra please get the parser reviewed for bugs"})
	r := lastReply(t, turn)
	assert.Equal(t, "kyra", r["agent"])
	assert.Equal(t, []string{"delegate_task"}, toolNames(r))
	assert.Nil(t, r["pending"], "the child finished within the turn")

	children := d.tasksOf("luke")
	require.Len(t, children, 1)
	child := d.task(children[0]["id"].(string))
	assert.Equal(t, conv, child["conversation_id"], "the child is linked to the conversation")
	assert.Equal(t, "completed", child["status"])
	assert.Equal(t, map[string]any{"type": "agent", "id": "kyra"}, child["created_by"])
	assert.Contains(t, r["content"], "Delegated work: ")
	assert.Contains(t, r["content"], child["result"].(string)[:40], "the child's result is in the reply")

	// Nothing more arrives for it: a short long-poll after the reply
	// returns no result message.
	st, page := d.call("GET", "/v1/conversations/"+conv+"/messages?after="+d.lastID(conv)+"&wait=3", nil)
	require.Equal(t, 200, st, page)
	assert.Empty(t, page["items"], "a delegation the reply delivered is not posted again")
}

// A reply that waited for a delegation and then failed (its agent's
// answer after the tool): the child's result, which only that reply was
// to carry, is posted into the conversation by the turn itself, once, as
// the child's agent's message; nothing else posts it later.
func TestChatDelegationOfAFailedReplyIsPostedBack(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "kyra", "delegate-fail:luke")
	conv := d.conversation("kyra")
	st, turn := d.call("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": "@kyra please get the parser reviewed for bugs"})
	require.Equal(t, 502, st, turn)
	assert.Equal(t, "AllAgentsFailed", turn["error"].(map[string]any)["reason"], turn)

	children := d.tasksOf("luke")
	require.Len(t, children, 1)
	child := d.task(children[0]["id"].(string))
	require.Equal(t, "completed", child["status"], "the child ended while the reply waited")
	assert.Equal(t, conv, child["conversation_id"])

	posted := d.results(conv, child["id"].(string))
	require.Len(t, posted, 1, "posted by the turn, before it answered")
	assert.Equal(t, "luke", posted[0]["agent"], "attributed to the agent that did the work")
	assert.Equal(t, child["result"], posted[0]["content"])
	assert.Equal(t, "completed", posted[0]["result_of"].(map[string]any)["status"])
	roles := []string{}
	for _, m := range d.messages(conv) {
		roles = append(roles, m["role"].(string))
	}
	assert.ElementsMatch(t, []string{"user", "system", "assistant"}, roles, "the user's message, the failure note and the result")

	// The child's own end posts nothing more: a long-poll after the
	// result stays empty.
	st, page := d.call("GET", "/v1/conversations/"+conv+"/messages?after="+d.lastID(conv)+"&wait=3", nil)
	require.Equal(t, 200, st, page)
	assert.Empty(t, page["items"])
	assert.Len(t, d.results(conv, child["id"].(string)), 1)
}

// A delegation the reply waits for that outlasts the turn's time (luke's
// model hangs): the reply answers in time, lists the task as pending and
// says it goes on; the task is released to the conversation, and its end
// (here a cancel) is posted there later, as luke's message.
func TestChatDelegationThatOutlastsTheTurnIsPostedLater(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "kyra", "delegate:luke")
	d.script(e, "luke", "timeout")
	conv := d.conversation("kyra")
	r := lastReply(t, d.post(conv, map[string]any{"content": "@kyra please get the parser reviewed for bugs"}))
	assert.Equal(t, []string{"delegate_task"}, toolNames(r))
	pending, _ := r["pending"].([]any)
	require.Len(t, pending, 1, "the child is still running: %v", r)
	p := pending[0].(map[string]any)
	assert.Equal(t, "task", p["type"])
	assert.Equal(t, "luke", p["agent"])
	id := p["id"].(string)
	assert.Contains(t, r["content"], "task "+id+" (luke) is still running; its result will be posted in this conversation when it is done")

	child := d.task(id)
	assert.Equal(t, conv, child["conversation_id"])
	assert.Equal(t, "conversation", child["result_delivery"], "released: the result-poster delivers it")
	assert.Contains(t, []any{"queued", "running"}, child["status"])

	st, res := d.call("POST", "/v1/tasks/"+id+"/cancel", map[string]any{"reason": "no longer needed"})
	require.Equal(t, 200, st, res)
	posted := d.awaitPosted(conv, r["id"].(string), id)
	assert.Equal(t, "luke", posted["agent"], "attributed to the agent that had the work")
	assert.Equal(t, "canceled", posted["result_of"].(map[string]any)["status"])
	assert.True(t, strings.HasPrefix(posted["content"].(string), "Task "+id+" ("), posted["content"])
	assert.Contains(t, posted["content"], "was canceled")
	assert.Len(t, d.results(conv, id), 1)
}

// Fire and forget: the reply says the work goes on; the result is posted
// into the conversation later, attributed to the agent that did it, and a
// long-polling client reads it; the delegating agent sees it next turn.
func TestChatFireAndForgetDelegationIsPostedBack(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "kyra", "delegate-async:luke")
	conv := d.conversation("kyra")
	turn := d.post(conv, map[string]any{"content": "@kyra have someone review the billing module"})
	r := lastReply(t, turn)
	assert.Equal(t, []string{"delegate_task", "check_task_status"}, toolNames(r))
	pending := r["pending"].([]any)
	require.Len(t, pending, 1)
	p := pending[0].(map[string]any)
	assert.Equal(t, "task", p["type"])
	assert.Equal(t, "luke", p["agent"])
	id := p["id"].(string)

	posted := d.awaitPosted(conv, r["id"].(string), id)
	assert.Equal(t, "luke", posted["agent"], "attributed to the agent that did the work")
	assert.Equal(t, "assistant", posted["role"])
	assert.Equal(t, "completed", posted["result_of"].(map[string]any)["status"])
	assert.Equal(t, d.task(id)["result"], posted["content"])

	// Kyra's next reply has the result in its history.
	d.script(e, "kyra", "")
	d.post(conv, map[string]any{"content": "@kyra what did Luke find?"})
	var seen bool
	for _, m := range d.messages(conv) {
		seen = seen || (m["id"] == posted["id"])
	}
	assert.True(t, seen)
}

// A reply that requests a report (without waiting) and one that starts a
// session: each outcome is posted back into the conversation.
func TestChatReportAndSessionArePostedBack(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "kyra", "report-async:dana")
	conv := d.conversation("kyra")
	r := lastReply(t, d.post(conv, map[string]any{"content": "@kyra research JWT rotation best practices"}))
	assert.Equal(t, []string{"request_report"}, toolNames(r))
	rep := r["pending"].([]any)[0].(map[string]any)
	assert.Equal(t, "report", rep["type"])
	posted := d.awaitPosted(conv, r["id"].(string), rep["id"].(string))
	assert.Equal(t, "dana", posted["agent"])
	assert.Equal(t, "completed", posted["result_of"].(map[string]any)["status"])

	d.script(e, "kyra", "collab:luke,dana")
	r = lastReply(t, d.post(conv, map[string]any{"content": "@kyra brainstorm how we should cache the catalog"}))
	assert.Equal(t, []string{"start_collaboration"}, toolNames(r))
	ses := r["pending"].([]any)[0].(map[string]any)
	assert.Equal(t, "session", ses["type"])
	st, s := d.call("GET", "/v1/sessions/"+ses["id"].(string), nil)
	require.Equal(t, 200, st, s)
	assert.Equal(t, conv, s["conversation_id"])
	assert.Equal(t, "kyra", s["lead"])
	posted = d.awaitPosted(conv, r["id"].(string), ses["id"].(string))
	assert.Equal(t, "kyra", posted["agent"], "the session's lead")
	assert.Equal(t, "completed", posted["result_of"].(map[string]any)["status"])
}

// An agent hands the conversation over from its reply: the same records as
// POST …/handoff (the record, the note, the memory, the event), and the
// new agent answers next.
func TestChatAgentInitiatedHandoff(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conversations := func() map[string]int {
		loads, err := e.db.gate.AgentLoads(context.Background(), d.id)
		require.NoError(t, err)
		out := map[string]int{}
		for slug, l := range loads.All() {
			if l.ActiveConversations != 0 {
				out[slug] = l.ActiveConversations
			}
		}
		return out
	}
	// What POST …/handoff writes, on a conversation of its own: the roles
	// and the counters the agent's handoff_to must write too.
	viaAPI := d.conversation("kyra")
	st, apiH := d.call("POST", "/v1/conversations/"+viaAPI+"/handoff", map[string]any{"to": "luke", "reason": "they are better placed to help with this"})
	require.Equal(t, 201, st, apiH)
	st, apiC := d.call("GET", "/v1/conversations/"+viaAPI, nil)
	require.Equal(t, 200, st, apiC)
	require.Equal(t, map[string]int{"luke": 1}, conversations(), "the API's handoff moved the conversation's count from kyra to luke")

	d.script(e, "kyra", "handoff:luke")
	conv := d.conversation("kyra")
	require.Equal(t, map[string]int{"luke": 1, "kyra": 1}, conversations())
	r := agentReply(t, d.post(conv, map[string]any{"content": "@kyra can you look at this stack trace?"}))
	assert.Equal(t, []string{"handoff_to"}, toolNames(r))
	st, c := d.call("GET", "/v1/conversations/"+conv, nil)
	require.Equal(t, 200, st, c)
	assert.Equal(t, "luke", c["current_agent"])
	assert.Equal(t, "kyra", c["previous_agent"])
	assert.Equal(t, participantRoles(t, apiC), participantRoles(t, c), "the same roles as POST …/handoff")
	assert.Equal(t, map[string]string{"kyra": "handoff_source", "luke": "invited"}, participantRoles(t, c))
	assert.Equal(t, map[string]int{"luke": 2}, conversations(), "the same counters as POST …/handoff: kyra's conversation is now luke's")
	st, hs := d.call("GET", "/v1/conversations/"+conv+"/handoffs", nil)
	require.Equal(t, 200, st, hs)
	items := hs["items"].([]any)
	require.Len(t, items, 1)
	h := items[0].(map[string]any)
	assert.Equal(t, "handoff", h["kind"])
	assert.Equal(t, "they are better placed to help with this", h["reason"])
	d.assertHandoverWrites(conv, h)
	d.handoffEvents(conv, 1)
	assert.Equal(t, "luke", lastReply(t, d.post(conv, map[string]any{"content": "Here is the trace: panic in main"}))["agent"])
}

// A reply messages a colleague and reads its own inbox.
func TestChatMessagingTools(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "kyra", "message:dana")
	conv := d.conversation("kyra")
	r := agentReply(t, d.post(conv, map[string]any{"content": "@kyra ask Dana for the signup numbers"}))
	assert.Equal(t, []string{"send_agent_message", "get_agent_inbox"}, toolNames(r))
	sent := r["tool_calls"].([]any)[0].(map[string]any)["output"].(string)
	id := regexp.MustCompile(`amsg_\w+`).FindString(sent)
	require.NotEmpty(t, id, sent)
	assert.Equal(t, map[string]int{"dana": 1}, d.waitInboxes(id, map[string]int{"dana": 1}), "a direct message reaches exactly one inbox")
	var got map[string]any
	for _, m := range d.inbox("dana") {
		if m["id"] == id {
			got = m
		}
	}
	assert.Contains(t, got["content"], "ask Dana for the signup numbers")
	assert.Equal(t, "kyra", got["from"])
}

// The tool-call budget and the token budget stop a reply's loop.
func TestChatBudgetsStopTheLoop(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "kyra", "tools:15")
	conv := d.conversation("kyra")
	r := lastReply(t, d.post(conv, map[string]any{"content": "@kyra check on everything"}))
	assert.Len(t, r["tool_calls"], 11, "ten run, the eleventh is refused")
	assert.Equal(t, "tool_call_budget", r["stopped"])

	d.script(e, "kyra", "spend:1500")
	r = lastReply(t, d.post(conv, map[string]any{"content": "@kyra dig into the logs"}))
	assert.Equal(t, "token_budget", r["stopped"])
	assert.Len(t, r["tool_calls"], 2, "the third response spends the budget; its call is not run")
	assert.GreaterOrEqual(t, r["input_tokens"].(float64)+r["output_tokens"].(float64), 4000.0)
}

// Each flag turns its tools off, through the conversations function's own
// wiring (conversationsfn.Service) on the local cloud, built from an
// environment whose FEATURE_FLAGS is the case's: the agent (scripted to
// call every tool it is offered, in turn) calls exactly the tools the flags
// leave.
func TestChatToolsFollowTheFlags(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "kyra", "tools:20")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cases := []struct {
		name, flags string
		tools       []string
	}{
		{"every flag on", "collaboration=true,expert_gate=true,ensemble=true,task_delegation=true,sessions=true",
			[]string{"delegate_task", "check_task_status", "next_task", "request_report", "get_report", "start_collaboration", "send_agent_message", "get_agent_inbox", "handoff_to", "consult_specialist", "consultation_follow_up", "close_consultation", "read_consultation"}},
		{"sessions off", "collaboration=true,expert_gate=true,ensemble=true,task_delegation=true,sessions=false",
			[]string{"delegate_task", "check_task_status", "next_task", "request_report", "get_report", "send_agent_message", "get_agent_inbox", "handoff_to", "consult_specialist", "consultation_follow_up", "close_consultation", "read_consultation"}},
		{"task_delegation off", "collaboration=true,expert_gate=true,ensemble=true,task_delegation=false,sessions=true",
			[]string{"send_agent_message", "get_agent_inbox", "handoff_to", "consult_specialist", "consultation_follow_up", "close_consultation", "read_consultation"}},
		{"collaboration off", "collaboration=false,expert_gate=true,ensemble=true,task_delegation=true,sessions=true", nil},
	}
	for _, c := range cases {
		env := map[string]string{settings.EnvStage: e.names.Stage, settings.EnvTable: e.names.Table(), settings.EnvBus: e.names.Bus(), settings.EnvFlags: c.flags,
			settings.EnvModelProvider: "local"}
		deps := lambdafn.Deps{Config: settings.FromLookup(func(k string) string { return env[k] }), AWS: e.cfg, Log: log}
		svc, err := conversationsfn.Service(deps, e.db.core)
		require.NoError(t, err)
		conv, err := svc.Create(context.Background(), d.id, conversations.CreateInput{Title: c.name, Agent: "kyra"})
		require.NoError(t, err)
		// The mention keeps kyra answering whatever routing the flags turn on.
		res, err := svc.Post(context.Background(), d.id, conv.ID, conversations.PostInput{Content: "@kyra do everything you can"})
		require.NoError(t, err, c.name)
		reply := res.Replies[len(res.Replies)-1]
		require.Equal(t, "kyra", reply.Agent, c.name)
		var got []string
		for _, u := range reply.ToolCalls {
			got = append(got, u.Tool)
		}
		// tools:20 calls the offered tools in turn: the first round names
		// each once, as far as the reply's tool-call budget goes (the
		// environment names no gate function: no find_colleagues).
		n := min(len(got), len(c.tools))
		assert.Equal(t, min(len(c.tools), workflow.MaxTaskToolCalls+1), n, c.name)
		assert.Equal(t, c.tools[:n], got[:n], c.name)
		for _, u := range reply.ToolCalls {
			assert.False(t, strings.HasPrefix(u.Output, "tool "), "%s: %s ran (%s)", c.name, u.Tool, u.Output)
		}
	}
}
