//go:build integration

// One trace per turn (issue 45, architecture decision 13): every function
// sends its spans to the edge (TRACE_ENDPOINT), which keeps them by trace
// (traces.go); a turn's answer names its trace (X-Trace-Id).
package cloud_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/localstack/cloud"
)

// traceOf reads trace id from the edge until done says it is whole (each
// function's spans leave after its answer), or 15 s pass.
func traceOf(t *testing.T, id string, done func([]*cloud.TraceSpan) bool) []*cloud.TraceSpan {
	t.Helper()
	var flat []*cloud.TraceSpan
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(os.Getenv("CONCLAVE_EDGE_URL") + cloud.TracesPath + id)
		require.NoError(t, err)
		var tree cloud.TraceTree
		if resp.StatusCode == http.StatusOK {
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&tree))
		}
		resp.Body.Close()
		flat = flatten(tree.Roots, nil)
		if (len(flat) > 0 && done(flat)) || time.Now().After(deadline) {
			return flat
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func flatten(spans []*cloud.TraceSpan, out []*cloud.TraceSpan) []*cloud.TraceSpan {
	for _, s := range spans {
		out = append(out, s)
		out = flatten(s.Children, out)
	}
	return out
}

// number is a whole-number attribute as the edge's JSON gives it.
func number(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// named are the spans whose name starts with prefix (and of service, if
// given).
func named(spans []*cloud.TraceSpan, prefix, service string) []*cloud.TraceSpan {
	var out []*cloud.TraceSpan
	for _, s := range spans {
		if strings.HasPrefix(s.Name, prefix) && (service == "" || s.Service == service) {
			out = append(out, s)
		}
	}
	return out
}

// under reports whether span id descends from ancestor in spans.
func under(spans []*cloud.TraceSpan, id, ancestor string) bool {
	parent := map[string]string{}
	for _, s := range spans {
		parent[s.SpanID] = s.ParentID
	}
	for cur := parent[id]; cur != ""; cur = parent[cur] {
		if cur == ancestor {
			return true
		}
	}
	return false
}

// A chat turn routed by the gate, whose agent calls a tool that delegates
// a task, is one trace: the HTTP route's span, the gate through its
// Lambda hop, the agent and its model calls with the GenAI attributes
// (tokens equal to what the reply stored), the tool, and the delegated
// task's lifecycle and worker through Step Functions; no prompt text, and
// the client's traceparent is a link, not the parent.
func TestATurnIsOneTrace(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "luke", "delegate:archie")
	conv := d.conversation("")
	client := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}
	const theirs = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	resp := client.Do("POST", "/v1/conversations/"+conv+"/messages",
		map[string]any{"content": "Can you review this Go function for bugs? It leaks a file handle."}, "traceparent", theirs)
	require.Equal(t, 201, resp.Status, string(resp.Body))
	id := resp.Header.Get("X-Trace-Id")
	require.Regexp(t, `^[0-9a-f]{32}$`, id)
	assert.NotEqual(t, "0af7651916cd43dd8448eb211c80319c", id, "a client's trace is never the parent")
	turn := resp.JSON(t)
	reply := lastReply(t, turn)
	require.Equal(t, "luke", reply["agent"], reply)
	require.Equal(t, []string{"delegate_task"}, toolNames(reply))

	spans := traceOf(t, id, func(s []*cloud.TraceSpan) bool {
		return len(named(s, "", "task-worker")) > 0 && len(named(s, "POST /v1/conversations/{id}/messages", "conversations")) > 0
	})
	roots := 0
	for _, s := range spans {
		if s.ParentID == "" {
			roots++
		}
	}
	assert.Equal(t, 1, roots, "one root")
	route := named(spans, "POST /v1/conversations/{id}/messages", "conversations")
	require.Len(t, route, 1)
	assert.Empty(t, route[0].ParentID)
	require.Len(t, route[0].Links, 1, "the client's traceparent is a link")
	assert.Equal(t, "0af7651916cd43dd8448eb211c80319c", route[0].Links[0].TraceID)
	assert.EqualValues(t, 201, route[0].Attributes["http.response.status_code"])

	decision := named(spans, "route", "conversations")
	require.Len(t, decision, 1)
	invoke := named(spans, "Lambda.Invoke", "conversations")
	gate := named(spans, "expert-gate", "expert-gate")
	require.NotEmpty(t, invoke)
	require.NotEmpty(t, gate, "the gate's invocation is in the turn's trace")
	// The gate's payload names the routing span that invoked it (the
	// Lambda call's own client span is the SDK's, made after the payload).
	assert.True(t, under(spans, invoke[0].SpanID, decision[0].SpanID))
	assert.True(t, under(spans, gate[0].SpanID, decision[0].SpanID), "the gate's invocation is under the turn's routing")
	assert.Equal(t, "luke", decision[0].Attributes["conclave.routing.selected_agents"].([]any)[0])

	agent := named(spans, "invoke_agent luke", "conversations")
	require.Len(t, agent, 1)
	assert.Equal(t, "invoke_agent", agent[0].Attributes["gen_ai.operation.name"])
	chats := named(spans, "chat ", "conversations")
	require.NotEmpty(t, chats)
	var in, out int64
	for _, c := range chats {
		if !under(spans, c.SpanID, agent[0].SpanID) {
			continue
		}
		assert.Equal(t, "chat", c.Attributes["gen_ai.operation.name"])
		assert.NotEmpty(t, c.Attributes["gen_ai.provider.name"])
		assert.NotEmpty(t, c.Attributes["gen_ai.request.model"])
		assert.Contains(t, c.Attributes, "conclave.cost_usd")
		in += number(c.Attributes["gen_ai.usage.input_tokens"])
		out += number(c.Attributes["gen_ai.usage.output_tokens"])
	}
	assert.EqualValues(t, reply["input_tokens"], in, "the spans' input tokens are the reply's")
	assert.EqualValues(t, reply["output_tokens"], out, "the spans' output tokens are the reply's")

	tool := named(spans, "execute_tool delegate_task", "conversations")
	require.Len(t, tool, 1)
	assert.True(t, under(spans, tool[0].SpanID, agent[0].SpanID))
	worker := named(spans, "", "task-worker")
	require.NotEmpty(t, worker, "the delegated task's worker is in the turn's trace")
	assert.True(t, under(spans, worker[0].SpanID, tool[0].SpanID), "through Step Functions, under the tool that delegated")
	assert.NotEmpty(t, named(spans, "chat ", "task-worker"), "the worker's model call")
	assert.NotEmpty(t, named(spans, "", "task-lifecycle"))

	for _, s := range spans {
		for k := range s.Attributes {
			assert.NotContains(t, []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.tool.call.arguments"}, k, "no content unless the stage records it: %s", s.Name)
		}
		for _, ev := range s.Events {
			for k := range ev.Attributes {
				assert.False(t, strings.HasPrefix(k, "gen_ai.input") || strings.HasPrefix(k, "gen_ai.output"), "no content in events: %s", s.Name)
			}
		}
	}

	st, dec := d.call("GET", "/v1/routing/decisions?conversation_id="+conv, nil)
	require.Equal(t, 200, st, dec)
	items := dec["items"].([]any)
	require.NotEmpty(t, items)
	assert.Equal(t, id, items[0].(map[string]any)["trace_id"], "the decision finds the trace")
}

// postTraced posts a turn and returns its answer and trace id.
func postTraced(t *testing.T, d demoTeam, conv, content string) (map[string]any, string) {
	t.Helper()
	client := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}
	resp := client.Do("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": content})
	require.Equal(t, 201, resp.Status, string(resp.Body))
	id := resp.Header.Get("X-Trace-Id")
	require.Regexp(t, `^[0-9a-f]{32}$`, id)
	return resp.JSON(t), id
}

// A session an agent starts from a reply runs its stages under the turn
// that started it (through Step Functions); the session keeps the trace.
func TestASessionsStagesAreUnderTheTurn(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "kyra", "collab:luke,dana")
	conv := d.conversation("kyra")
	turn, id := postTraced(t, d, conv, "@kyra brainstorm how we should cache the catalog")
	r := lastReply(t, turn)
	require.Equal(t, []string{"start_collaboration"}, toolNames(r))
	ses := r["pending"].([]any)[0].(map[string]any)
	d.awaitPosted(conv, r["id"].(string), ses["id"].(string))

	spans := traceOf(t, id, func(s []*cloud.TraceSpan) bool {
		return len(named(s, "", "result-poster")) > 0 && len(named(s, "execute_tool start_collaboration", "conversations")) > 0
	})
	tool := named(spans, "execute_tool start_collaboration", "conversations")
	require.Len(t, tool, 1)
	steps := named(spans, "", "session-steps")
	require.NotEmpty(t, steps, "the session's stages are in the turn's trace")
	for _, s := range steps {
		if s.Name == "session-steps" { // an invocation's own span
			assert.True(t, under(spans, s.SpanID, tool[0].SpanID), "a stage under the tool that started the session")
		}
	}
	assert.NotEmpty(t, named(spans, "chat ", "session-steps"), "a stage's agent answered in the trace")
	st, got := d.call("GET", "/v1/sessions/"+ses["id"].(string), nil)
	require.Equal(t, 200, st, got)
	assert.Equal(t, id, got["trace_id"], "the session finds the trace")
}

// A plan the turn starts runs its steps under the turn: each step's task
// and worker, through the plan's machine and the delegation machine; the
// plan keeps the trace.
func TestAPlansStepsAreUnderTheTurn(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	turn, id := postTraced(t, d, d.conversation("kyra"), "Review this handler for bugs, then write release notes for the fix")
	plan := pendingPlan(t, turn)
	spans := traceOf(t, id, func(s []*cloud.TraceSpan) bool {
		return len(named(s, "chat ", "task-worker")) >= 2 && len(named(s, "POST /v1/conversations/{id}/messages", "conversations")) > 0
	})
	route := named(spans, "POST /v1/conversations/{id}/messages", "conversations")
	require.Len(t, route, 1)
	steps := named(spans, "plan-steps", "plan-steps")
	require.NotEmpty(t, steps, "the plan's steps are in the turn's trace")
	for _, s := range steps {
		assert.True(t, under(spans, s.SpanID, route[0].SpanID))
	}
	assert.GreaterOrEqual(t, len(named(spans, "chat ", "task-worker")), 2, "both steps' workers answered in the trace")
	st, got := d.call("GET", "/v1/plans/"+plan, nil)
	require.Equal(t, 200, st, got)
	assert.Equal(t, id, got["trace_id"], "the plan finds the trace")
}
