//go:build integration

// AWS call budgets: every HTTP route family and every workflow step is held
// to a budget of AWS calls by service (attempts, retries included; see
// shared/platform/awscalls). The edge returns a route function's counts in the
// X-Conclave-Aws-Calls header of each response, and keeps every
// invocation's counts (workflow steps, queue consumers, the gate) at
// /_conclave/invocations (localstack/cloud/calls.go). docs/testing.md, "AWS calls
// per operation", is this table; keep them together.
package cloud_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/shared/work/worker"
)

// calls is a budget: the most attempts per service ("DynamoDB") and,
// where it matters, per operation ("DynamoDB.TransactWriteItems"). A
// service it does not name may not be called at all.
type calls map[string]int

// invocation is one entry of the edge's invocation log.
type invocation struct {
	Seq       int64          `json:"seq"`
	Function  string         `json:"function"`
	TeamID    string         `json:"team_id"`
	TaskID    string         `json:"task_id"`
	SessionID string         `json:"session_id"`
	Action    string         `json:"action"`
	Records   int            `json:"records"`
	Calls     map[string]int `json:"aws_calls"`
	Retries   int            `json:"aws_retries"`
	// DurationMS: how long it ran (the edge measures it).
	DurationMS int64 `json:"duration_ms"`
}

// guardUpdates are the team budget's writes per model call (the CostGuard,
// docs/operations.md "Team budgets"): the worst case reserved on the
// team's month, the month settled to the real cost, and the day's usage
// counter, one UpdateItem each. The team's first call of a month also
// finds the month without its budget (the refused reservation), reads the
// budget and initializes the month: two more updates and a read.
const guardUpdates = 3

// charged is c plus the CostGuard's calls for modelCalls model calls, the
// first of which may be the team's first of the month.
func charged(c calls, modelCalls int, mayBeFirst bool) calls {
	out := maps.Clone(c)
	n, get := guardUpdates*modelCalls, 0
	if mayBeFirst {
		n, get = n+2, 1
	}
	out["DynamoDB"] += n + get
	out["DynamoDB.UpdateItem"] += n
	if _, ok := out["DynamoDB.GetItem"]; ok {
		out["DynamoDB.GetItem"] += get
	}
	return out
}

// watchReads is how many reads a task-worker attempt's watch made at most:
// one per worker.WatchInterval it ran. A loaded machine's attempt runs
// longer and reads more; the budget follows what it measured.
func watchReads(inv invocation) int {
	// Plus one: the watch's ticks run on the function's clock and the
	// duration is the edge's, so the whole intervals counted can be one
	// short of the ticks (a cold CI run once read 36 of a stage's 35).
	return int(inv.DurationMS/worker.WatchInterval.Milliseconds()) + 1
}

// invocations reads the edge's invocation log after seq (function and
// team filter when not empty) and its last seq.
func invocations(t *testing.T, since int64, function, team string) ([]invocation, int64) {
	t.Helper()
	edge := os.Getenv("CONCLAVE_EDGE_URL")
	require.NotEmpty(t, edge)
	q := url.Values{"since": {fmt.Sprint(since)}, "function": {function}, "team": {team}}
	resp, err := http.Get(edge + cloud.InvocationsPath + "?" + q.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		LastSeq     int64        `json:"last_seq"`
		Invocations []invocation `json:"invocations"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Invocations, out.LastSeq
}

func lastSeq(t *testing.T) int64 {
	t.Helper()
	_, n := invocations(t, 1<<62, "", "")
	return n
}

// byService sums counts per service.
func byService(counts map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range counts {
		svc, _, _ := strings.Cut(k, ".")
		out[svc] += n
	}
	return out
}

// within checks counts against max.
func within(t *testing.T, what string, counts map[string]int, max calls) {
	t.Helper()
	for svc, n := range byService(counts) {
		assert.LessOrEqual(t, n, max[svc], "%s: %s calls %v over the budget %v", what, svc, counts, max)
	}
	for k, limit := range max {
		if strings.Contains(k, ".") {
			assert.LessOrEqual(t, counts[k], limit, "%s: %s calls %v over the budget %v", what, k, counts, max)
		}
	}
}

// sum adds invocations' counts.
func sum(list []invocation) map[string]int {
	out := map[string]int{}
	for _, inv := range list {
		for k, n := range inv.Calls {
			out[k] += n
		}
	}
	return out
}

// measured is one row of the table the test prints (go test -v).
type measured struct {
	op    string
	calls map[string]int
	extra string
}

// list is the counts as "DynamoDB.GetItem 1, DynamoDB.Query 2".
func (m measured) list() string {
	keys := make([]string, 0, len(m.calls))
	for k := range m.calls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m.calls[k]))
	}
	return strings.Join(parts, ", ")
}

func (m measured) String() string {
	return fmt.Sprintf("| %s | %s | %s |", m.op, m.list(), m.extra)
}

// step is one API operation and its budget.
type step struct {
	op     string // the route, or what the call does
	method string
	path   func() string
	body   any
	status int
	max    calls
	// gate is the budget of the expert-gate invocations the operation
	// makes, summed (nil: it invokes the gate not at all).
	gate calls
	// asyncGate: an event the operation publishes makes a consumer ask
	// the gate (the routing-evaluator taking a handoff's correction),
	// which may land in the operation's window on a fast machine: at
	// most that one invocation is not the operation's.
	asyncGate bool
	// before runs first (a wait for the state the operation needs; its own
	// calls are not the operation's).
	before func()
	then   func(res map[string]any)
}

// runSteps performs each step in order as team's api and holds it to its
// budget: the route function's calls (the edge's response header), the
// authorizer's, and the expert-gate invocations it made. It returns the
// measured rows.
func runSteps(t *testing.T, api apitest.Client, team string, steps []step) []measured {
	t.Helper()
	var table []measured
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		before := lastSeq(t)
		body := s.body
		if f, ok := body.(func() any); ok {
			body = f()
		}
		resp := api.Do(s.method, s.path(), body)
		require.Equal(t, s.status, resp.Status, "%s: %s", s.op, resp.Body)
		var got, auth map[string]int
		require.NoError(t, json.Unmarshal([]byte(resp.Header.Get(cloud.AWSCallsHeader)), &got), s.op)
		require.NoError(t, json.Unmarshal([]byte(resp.Header.Get(cloud.AuthorizerCallsHeader)), &auth), s.op)
		within(t, s.op+" (authorizer)", auth, calls{"DynamoDB": 2}) // the key, by its hash; the team's request count of this second
		row := measured{op: s.op, calls: got}
		within(t, s.op, got, s.max)
		gates, _ := invocations(t, before, "expert-gate", team)
		if s.gate != nil {
			require.Len(t, gates, 1, "%s invokes the gate once", s.op)
			within(t, s.op+" (expert-gate)", gates[0].Calls, s.gate)
			row.extra = fmt.Sprintf("expert-gate: %s", measured{calls: gates[0].Calls}.list())
		} else if s.asyncGate {
			assert.LessOrEqual(t, len(gates), 1, "%s invokes no gate (its event's consumer may, once)", s.op)
		} else {
			assert.Empty(t, gates, "%s invokes no gate", s.op)
		}
		table = append(table, row)
		if s.then != nil && len(resp.Body) > 0 {
			s.then(resp.JSON(t))
		}
	}
	return table
}

// Budgets per API operation, one row per route (some routes twice, in
// another state). The numbers are attempts by service as the function
// makes them; a comment says why where a budget is above what the design
// allows at the minimum (docs/testing.md has the same table). Every model call is
// a Bedrock Converse call (BedrockRuntime), as in AWS: the functions run
// the Bedrock adapter and the edge answers it.
func TestAWSCallBudgetsPerOperation(t *testing.T) {
	e := mustSerialEnv(t)
	d := mustDemoTeam(t, e)
	api := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}
	require.NotEmpty(t, api.Base)
	start := lastSeq(t)

	var (
		newKeyID                       string
		task1, task2, task3, task4, ch string
		linked                         string
		conv, replyID, decisionID      string
		evaluationID                   string
		agentMsgID                     string
		aprTask, aprID                 string
		version                        float64
	)
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	lit := func(s string) func() string { return func() string { return s } }
	dynamo := func(n int) calls { return calls{"DynamoDB": n} }
	convPath := func(tail string) func() string { return func() string { return "/v1/conversations/" + conv + tail } }
	taskPath := func(id *string, tail string) func() string { return func() string { return "/v1/tasks/" + *id + tail } }
	// A task is created in one transaction (the task, its first event, the
	// assignee's slot) and announced once.
	create := calls{"DynamoDB": 1, "EventBridge": 1}
	// A status change reads the task (its assignee, whose counter the
	// transaction moves, and its event sequence) and writes one
	// transaction; announced once. Above the target of 1: see docs/testing.md.
	transition := calls{"DynamoDB": 2, "DynamoDB.GetItem": 1, "DynamoDB.TransactWriteItems": 1, "EventBridge": 1}

	probes := len(manifest.StateMachines)
	queues := 0
	for _, q := range manifest.Queues {
		queues++
		if !q.DeadLetterOnly {
			queues++ // and its DLQ
		}
	}
	// A chat turn reads the conversation, the active agents, the team (its
	// default agent) and the history, then per agent asked its memory
	// context, asks the model (one Converse call), and commits in one
	// transaction. A context not cached yet is built (the memory epoch, the
	// recent memories) and cached (one transaction). The gate gets the
	// agents with the request and reads only the counters and the ratings.
	// A turn reads its conversation's participants too (invited ones are
	// preferred, removed ones never routed to): one Query.
	// And the answering agent's unread inbox (one Query; shown messages
	// are marked read after the commit, one write, none here).
	// And the model call charged to the team's budget (charged; the
	// team's month is initialized by the task run above).
	turnBuilt := charged(calls{"DynamoDB": 11, "DynamoDB.GetItem": 4, "DynamoDB.Query": 5, "DynamoDB.TransactWriteItems": 2, "BedrockRuntime": 1}, 1, false)
	turnCached := charged(calls{"DynamoDB": 8, "DynamoDB.GetItem": 3, "DynamoDB.Query": 4, "DynamoDB.TransactWriteItems": 1, "BedrockRuntime": 1}, 1, false)
	// The gate: the counters and the ratings (two queries); the team's
	// skills have no examples, so it reads no classifier.
	gate := calls{"DynamoDB": 2, "DynamoDB.Query": 2}
	withGate := func(c calls) calls {
		out := calls{"Lambda": 1}
		for k, v := range c {
			out[k] = v
		}
		return out
	}

	steps := []step{
		// health: one probe per dependency.
		{op: "GET /v1/health", method: "GET", path: lit("/v1/health"), status: 200,
			max: calls{"DynamoDB": 1, "EventBridge": 1, "SFN": probes, "SQS": queues}},

		// agents
		{op: "POST /v1/agents", method: "POST", path: lit("/v1/agents"), status: 201,
			body: map[string]any{"slug": "budgie", "name": "Budgie", "skills": []map[string]any{{"name": "testing", "description": "tests", "priority": 10}}},
			max:  calls{"DynamoDB": 1, "EventBridge": 1}, then: func(r map[string]any) { version, _ = r["version"].(float64) }},
		// the page, and the team item: is_default is the team's.
		{op: "GET /v1/agents", method: "GET", path: lit("/v1/agents"), status: 200, max: dynamo(2)},
		// the same page, narrowed to the agents whose model the stage
		// does not offer (its settings, no call).
		{op: "GET /v1/agents?misconfigured=true", method: "GET", path: lit("/v1/agents?misconfigured=true"), status: 200, max: dynamo(2)},
		// the stage's models: the function's settings, no AWS call.
		{op: "GET /v1/models", method: "GET", path: lit("/v1/models"), status: 200, max: calls{}},
		// the agent and the team item (is_default).
		{op: "GET /v1/agents/{slug}", method: "GET", path: lit("/v1/agents/budgie"), status: 200, max: dynamo(2)},
		// the skill registry (docs/skills.md): one page of agents; one
		// agent by its key.
		{op: "GET /v1/skills", method: "GET", path: lit("/v1/skills?domain=code"), status: 200, max: calls{"DynamoDB": 1, "DynamoDB.Query": 1}},
		{op: "GET /v1/skills?agent=", method: "GET", path: lit("/v1/skills?agent=budgie"), status: 200, max: calls{"DynamoDB": 1, "DynamoDB.GetItem": 1}},
		{op: "GET /v1/skills/{agent}/{name}", method: "GET", path: lit("/v1/skills/budgie/testing"), status: 200, max: calls{"DynamoDB": 1, "DynamoDB.GetItem": 1}},
		// the agent and the team item (is_default), one conditional put;
		// every agent write announces AgentsChanged (the classifier-fitter).
		{op: "PATCH /v1/agents/{slug}", method: "PATCH", path: lit("/v1/agents/budgie"), status: 200,
			body: func() any { return map[string]any{"tagline": "counts calls", "version": version} }, max: calls{"DynamoDB": 3, "EventBridge": 1}},
		// one transaction (the default must stay active), the agent read back.
		{op: "POST /v1/agents/{slug}/pause", method: "POST", path: lit("/v1/agents/budgie/pause"), status: 200, max: calls{"DynamoDB": 2, "EventBridge": 1}},
		// as pause, and the team item: an active agent may be the default.
		{op: "POST /v1/agents/{slug}/activate", method: "POST", path: lit("/v1/agents/budgie/activate"), status: 200, max: calls{"DynamoDB": 3, "EventBridge": 1}},
		{op: "PUT /v1/team/default-agent", method: "PUT", path: lit("/v1/team/default-agent"), status: 200,
			body: map[string]any{"slug": "kyra"}, max: dynamo(2)},

		// team
		{op: "GET /v1/team", method: "GET", path: lit("/v1/team"), status: 200, max: dynamo(1)},
		{op: "GET /v1/keys", method: "GET", path: lit("/v1/keys"), status: 200, max: dynamo(1)},
		{op: "POST /v1/keys", method: "POST", path: lit("/v1/keys"), status: 201, body: map[string]any{"name": "budget"}, max: dynamo(1),
			then: func(r map[string]any) { newKeyID = str(r, "id") }},
		// the key is found by id twice: by the service (its name) and by
		// the store (its hash); then one transaction.
		{op: "POST /v1/keys/{id}/rotate", method: "POST", path: func() string { return "/v1/keys/" + newKeyID + "/rotate" }, status: 201, max: dynamo(3),
			then: func(r map[string]any) { newKeyID = str(r, "id") }},
		// the key found by id (index), one conditional update.
		{op: "DELETE /v1/keys/{id}", method: "DELETE", path: func() string { return "/v1/keys/" + newKeyID }, status: 200, max: dynamo(2)},
		{op: "GET /v1/activity", method: "GET", path: lit("/v1/activity"), status: 200, max: dynamo(1)},

		// tasks
		{op: "POST /v1/tasks", method: "POST", path: lit("/v1/tasks"), status: 201,
			body: map[string]any{"assignee": "luke", "title": "budget parent"}, max: create,
			then: func(r map[string]any) { task1 = str(r, "id") }},
		{op: "GET /v1/tasks", method: "GET", path: lit("/v1/tasks"), status: 200, max: dynamo(1)},
		// the task and its timeline.
		{op: "GET /v1/tasks/{id}", method: "GET", path: taskPath(&task1, ""), status: 200, max: dynamo(2)},
		{op: "POST /v1/tasks/{id}/start", method: "POST", path: taskPath(&task1, "/start"), status: 200, max: transition},
		{op: "POST /v1/tasks/{id}/block", method: "POST", path: taskPath(&task1, "/block"), status: 200, max: transition},
		{op: "POST /v1/tasks/{id}/start (resume)", method: "POST", path: taskPath(&task1, "/start"), status: 200, max: transition},
		// read the parent, one transaction; announced; the execution started.
		{op: "POST /v1/tasks/{id}/delegate", method: "POST", path: taskPath(&task1, "/delegate"), status: 201,
			body: map[string]any{"assignee": "dana", "title": "budget child", "instructions": "sum the numbers"},
			max:  calls{"DynamoDB": 2, "DynamoDB.GetItem": 1, "DynamoDB.TransactWriteItems": 1, "EventBridge": 1, "SFN": 1},
			then: func(r map[string]any) { ch = str(r, "id") }},
		{op: "POST /v1/tasks/{id}/complete", method: "POST", path: taskPath(&task1, "/complete"), status: 200,
			body: map[string]any{"output": "done"}, max: transition},
		{op: "POST /v1/tasks (to fail)", method: "POST", path: lit("/v1/tasks"), status: 201,
			body: map[string]any{"assignee": "luke", "title": "budget fail"}, max: create,
			then: func(r map[string]any) { task2 = str(r, "id") }},
		{op: "POST /v1/tasks/{id}/start (to fail)", method: "POST", path: taskPath(&task2, "/start"), status: 200, max: transition},
		{op: "POST /v1/tasks/{id}/fail", method: "POST", path: taskPath(&task2, "/fail"), status: 200,
			body: map[string]any{"reason": "no"}, max: transition},
		{op: "POST /v1/tasks (to cancel)", method: "POST", path: lit("/v1/tasks"), status: 201,
			body: map[string]any{"assignee": "luke", "title": "budget cancel"}, max: create,
			then: func(r map[string]any) { task3 = str(r, "id") }},
		{op: "POST /v1/tasks/{id}/cancel", method: "POST", path: taskPath(&task3, "/cancel"), status: 200, max: transition},
		{op: "POST /v1/tasks (to assign)", method: "POST", path: lit("/v1/tasks"), status: 201,
			body: map[string]any{"assignee": "luke", "title": "budget assign"}, max: create,
			then: func(r map[string]any) { task4 = str(r, "id") }},
		// queued stays queued: no status change to announce.
		{op: "POST /v1/tasks/{id}/assign", method: "POST", path: taskPath(&task4, "/assign"), status: 200,
			body: map[string]any{"assignee": "dana"}, max: transition},
		// luke's queue (docs/api.md, "Priority"): one Query of its sparse
		// index, already in order.
		{op: "POST /v1/tasks (queued work)", method: "POST", path: lit("/v1/tasks"), status: 201,
			body: map[string]any{"assignee": "luke", "title": "budget queued", "priority": "urgent"}, max: create},
		{op: "GET /v1/tasks?sort=priority", method: "GET", path: lit("/v1/tasks?assignee=luke&status=queued&sort=priority"), status: 200, max: dynamo(1)},
		// one Query of the queue, one transaction from the task it read
		// (no second read); announced.
		{op: "POST /v1/agents/{slug}/next-task", method: "POST", path: lit("/v1/agents/luke/next-task"), status: 200,
			max: calls{"DynamoDB": 2, "DynamoDB.Query": 1, "DynamoDB.TransactWriteItems": 1, "EventBridge": 1}},
		// the empty queue, and the agent (an unknown one is 404).
		{op: "POST /v1/agents/{slug}/next-task (none)", method: "POST", path: lit("/v1/agents/luke/next-task"), status: 204,
			max: calls{"DynamoDB": 2, "DynamoDB.Query": 1, "DynamoDB.GetItem": 1}},
		// the agent (an unknown one is 404; an agent never counted has no
		// counter item) and its counter.
		{op: "GET /v1/agents/{slug}/load", method: "GET", path: lit("/v1/agents/luke/load"), status: 200, max: dynamo(2)},
		// the agent: the tools and schemas its model receives, built in
		// memory (the same code path as the model request).
		{op: "GET /v1/agents/{slug}/tools", method: "GET", path: lit("/v1/agents/kyra/tools"), status: 200, max: dynamo(1)},
		{op: "GET /v1/agents/{slug}/tools?context=task", method: "GET", path: lit("/v1/agents/kyra/tools?context=task"), status: 200, max: dynamo(1)},
		// the tool packs: built in, with the catalog's schemas; no call.
		{op: "GET /v1/tool-packs", method: "GET", path: lit("/v1/tool-packs"), status: 200, max: calls{"DynamoDB": 1, "DynamoDB.Query": 1}},
		{op: "GET /v1/tool-packs/{name}", method: "GET", path: lit("/v1/tool-packs/bridging"), status: 200, max: calls{}},

		// approvals (docs/approvals.md)
		// the whole policy, one put.
		{op: "PUT /v1/approval-policy", method: "PUT", path: lit("/v1/approval-policy"), status: 200,
			body: map[string]any{"tools": []string{"send_agent_message"}}, max: calls{"DynamoDB": 1, "DynamoDB.PutItem": 1},
			before: func() {
				_, err := agents.NewService(e.db.agents).Create(context.Background(), d.id, agents.CreateInput{
					Slug: "ava", Name: "Ava", Model: &agents.Model{Script: "message:luke"},
					Skills: []agents.Skill{{Name: "coordination", Description: "coordinates the team", Priority: 50}},
				})
				require.NoError(t, err)
			}},
		{op: "GET /v1/approval-policy", method: "GET", path: lit("/v1/approval-policy"), status: 200, max: dynamo(1)},
		// due dates (docs/api.md, "Due dates"): the whole policy, one put;
		// a task due already is created in the one transaction (its due
		// entry is an item of it).
		{op: "PUT /v1/board-policy", method: "PUT", path: lit("/v1/board-policy"), status: 200,
			body: map[string]any{"escalate_overdue": true}, max: calls{"DynamoDB": 1, "DynamoDB.PutItem": 1}},
		{op: "GET /v1/board-policy", method: "GET", path: lit("/v1/board-policy"), status: 200, max: dynamo(1)},
		{op: "POST /v1/tasks (due already)", method: "POST", path: lit("/v1/tasks"), status: 201,
			body: map[string]any{"assignee": "dana", "title": "budget overdue", "due_at": "2020-01-01T00:00:00Z"}, max: create},

		// team budgets (docs/operations.md, "Team budgets")
		// the budget and its month in one transaction, both read back for
		// the answer.
		{op: "PUT /v1/budget", method: "PUT", path: lit("/v1/budget"), status: 200,
			body: map[string]any{"monthly_limit_usd": 500}, max: calls{"DynamoDB": 3, "DynamoDB.TransactWriteItems": 1, "DynamoDB.GetItem": 2}},
		// the budget and the month's ledger.
		{op: "GET /v1/budget", method: "GET", path: lit("/v1/budget"), status: 200, max: calls{"DynamoDB": 2, "DynamoDB.GetItem": 2}},
		// one Query of the range's counters, summed in memory.
		{op: "GET /v1/usage", method: "GET", path: lit("/v1/usage?group_by=model"), status: 200, max: calls{"DynamoDB": 1, "DynamoDB.Query": 1}},
		// a page (a gated task of ava's waits for its approval).
		{op: "GET /v1/approvals", method: "GET", path: lit("/v1/approvals"), status: 200, max: dynamo(1),
			before: func() {
				svc, _ := taskService(t, e)
				gated, err := svc.Create(context.Background(), d.id, user, executed(d.id, "ava", "Ask luke", 60), false)
				require.NoError(t, err)
				aprTask = gated.ID
				aprID = d.pendingApproval(gated.ID)["id"].(string)
			}},
		{op: "GET /v1/approvals/{id}", method: "GET", path: func() string { return "/v1/approvals/" + aprID }, status: 200, max: dynamo(1)},
		// the approval (its tool, for the arguments' schema), one
		// conditional update; announced; the decision sent to the waiting
		// execution's token. (Rejected: luke's inbox stays empty for the
		// turns below.)
		{op: "POST /v1/approvals/{id}", method: "POST", path: func() string { return "/v1/approvals/" + aprID }, status: 200,
			body: map[string]any{"decision": "reject", "reason": "budget run"}, max: calls{"DynamoDB": 2, "DynamoDB.GetItem": 1, "DynamoDB.UpdateItem": 1, "EventBridge": 1, "SFN": 1}},

		// conversations
		// the agent (it must be active), one transaction.
		{op: "POST /v1/conversations", method: "POST", path: lit("/v1/conversations"), status: 201,
			body: map[string]any{"title": "budget", "agent": "kyra"}, max: dynamo(2),
			then: func(r map[string]any) { conv = str(r, "id") }},
		{op: "GET /v1/conversations", method: "GET", path: lit("/v1/conversations"), status: 200, max: dynamo(1)},
		// the conversation and its participants.
		{op: "GET /v1/conversations/{id}", method: "GET", path: convPath(""), status: 200, max: dynamo(2)},
		{op: "POST /v1/conversations/{id}/messages (gate; context built)", method: "POST", path: convPath("/messages"), status: 201,
			body: map[string]any{"content": "Can you review this Go function for bugs?"}, max: withGate(turnBuilt), gate: gate,
			then: func(r map[string]any) {
				replies := r["replies"].([]any)
				replyID = str(replies[len(replies)-1].(map[string]any), "id")
				decisionID = str(r["routing"].(map[string]any), "id")
			}},
		{op: "POST /v1/conversations/{id}/messages (gate; context cached)", method: "POST", path: convPath("/messages"), status: 201,
			body: map[string]any{"content": "Can you review this Go function for bugs?"}, max: withGate(turnCached), gate: gate},
		// a page (the conversation is read only for an empty page's 404).
		{op: "GET /v1/conversations/{id}/messages", method: "GET", path: convPath("/messages"), status: 200, max: dynamo(1)},
		// the message (its key proves the conversation), one transaction.
		{op: "POST /v1/conversations/{id}/messages/{message_id}/feedback", method: "POST",
			path: func() string { return "/v1/conversations/" + conv + "/messages/" + replyID + "/feedback" }, status: 200,
			body: map[string]any{"rating": 5}, max: dynamo(2)},
		// the conversation, each agent added, one transaction, and the
		// conversation with its participants read back for the answer.
		{op: "POST /v1/conversations/{id}/agents", method: "POST", path: convPath("/agents"), status: 200,
			body: map[string]any{"add": []string{"dana"}}, max: dynamo(5)},
		// the conversation, both agents, one transaction (with the
		// memory and the two cached contexts dropped), announced; after
		// the commit, the latest messages read: the handoff corrects the
		// gate's choice for the last message (RoutingCorrected, a second
		// announcement).
		{op: "POST /v1/conversations/{id}/handoff", method: "POST", path: convPath("/handoff"), status: 201,
			body: map[string]any{"to": "dana", "reason": "numbers"}, max: calls{"DynamoDB": 5, "DynamoDB.TransactWriteItems": 1, "DynamoDB.Query": 1, "EventBridge": 2},
			asyncGate: true},
		// handed off: no gate; dana's context is built. (Before it, the
		// routing-evaluator has kept the correction: it asks the gate for
		// dana's best skill, which is not this turn's call.)
		{op: "POST /v1/conversations/{id}/messages (handed off; context built)", method: "POST", path: convPath("/messages"), status: 201,
			body: map[string]any{"content": "what is the sum of 2 and 3"}, max: turnBuilt,
			before: func() {
				require.Eventually(t, func() bool {
					inv, _ := invocations(t, 0, "routing-evaluator", d.id)
					return len(inv) > 0
				}, 60*time.Second, 200*time.Millisecond, "the routing-evaluator took the handoff's correction")
			}},
		{op: "POST /v1/conversations/{id}/return", method: "POST", path: convPath("/return"), status: 201,
			max: calls{"DynamoDB": 4, "DynamoDB.TransactWriteItems": 1, "EventBridge": 1}},
		{op: "GET /v1/conversations/{id}/handoffs", method: "GET", path: convPath("/handoffs"), status: 200, max: dynamo(1)},
		// the conversation, the agent, the history and the memory context
		// (dropped by the return: built and cached, as in a turn).
		{op: "GET /v1/conversations/{id}/context", method: "GET", path: convPath("/context?agent=kyra"), status: 200,
			max: calls{"DynamoDB": 7, "DynamoDB.TransactWriteItems": 1}},
		// a task linked to the conversation: the conversation is a
		// condition of the create's one transaction, no extra call.
		{op: "POST /v1/tasks (linked to a conversation)", method: "POST", path: lit("/v1/tasks"), status: 201,
			body: func() any {
				return map[string]any{"assignee": "luke", "title": "budget linked", "conversation_id": conv}
			}, max: create,
			then: func(r map[string]any) { linked = str(r, "id") }},
		{op: "POST /v1/tasks/{id}/start (linked)", method: "POST", path: taskPath(&linked, "/start"), status: 200, max: transition},
		{op: "POST /v1/tasks/{id}/complete (linked)", method: "POST", path: taskPath(&linked, "/complete"), status: 200,
			body: map[string]any{"output": "posted into the conversation"}, max: transition},
		// the messages after one: a page (and, when it is empty, the
		// conversation, for a 404); wait=0 answers at once.
		{op: "GET /v1/conversations/{id}/messages?after=", method: "GET", path: func() string { return "/v1/conversations/" + conv + "/messages?after=" + replyID + "&wait=0" },
			status: 200, max: dynamo(2)},
		// the conversation (its current agent's counter moves), one transaction.
		{op: "POST /v1/conversations/{id}/close", method: "POST", path: convPath("/close"), status: 200, max: dynamo(2)},

		// discovery
		{op: "GET /v1/agents/recommend", method: "GET", path: lit("/v1/agents/recommend?query=review+my+code"), status: 200,
			max: calls{"DynamoDB": 1, "Lambda": 1}, gate: gate},
		// declined: the team's default agent read too (the team item).
		{op: "GET /v1/agents/recommend (declined)", method: "GET", path: lit("/v1/agents/recommend?query=review+my+code&confidence_threshold=1"), status: 200,
			max: calls{"DynamoDB": 2, "DynamoDB.GetItem": 1, "Lambda": 1}, gate: gate},
		{op: "GET /v1/agents/experts", method: "GET", path: lit("/v1/agents/experts?skills=testing"), status: 200, max: dynamo(2)},
		{op: "GET /v1/agents/{slug}/availability", method: "GET", path: lit("/v1/agents/luke/availability"), status: 200, max: dynamo(2)},

		// routing
		{op: "GET /v1/routing/decisions", method: "GET", path: lit("/v1/routing/decisions"), status: 200, max: dynamo(1)},
		{op: "GET /v1/routing/decisions/{id}", method: "GET", path: func() string { return "/v1/routing/decisions/" + decisionID }, status: 200, max: dynamo(1)},
		{op: "GET /v1/routing/analytics/agents", method: "GET", path: lit("/v1/routing/analytics/agents?query=review+code"), status: 200, max: dynamo(1)},
		{op: "GET /v1/routing/analytics/strategies", method: "GET", path: lit("/v1/routing/analytics/strategies"), status: 200, max: dynamo(1)},
		// the team's active agents; their skills have no examples, so no
		// classifier is read.
		{op: "GET /v1/routing/calibration", method: "GET", path: lit("/v1/routing/calibration"), status: 200, max: dynamo(1)},
		// the evaluation stored, then announced (its message @mentions its
		// agent: the routing-evaluator that runs it meanwhile asks no gate,
		// whose calls would count against the next step).
		{op: "POST /v1/routing/evaluations", method: "POST", path: lit("/v1/routing/evaluations"), status: 202,
			body: map[string]any{"messages": []any{map[string]any{"content": "@luke review my code", "expected_agent": "luke"}}},
			max:  calls{"DynamoDB": 1, "DynamoDB.PutItem": 1, "EventBridge": 1}, then: func(r map[string]any) { evaluationID = str(r, "id") }},
		{op: "GET /v1/routing/evaluations", method: "GET", path: lit("/v1/routing/evaluations"), status: 200, max: calls{"DynamoDB": 1, "DynamoDB.Query": 1}},
		{op: "GET /v1/routing/evaluations/{id}", method: "GET", path: func() string { return "/v1/routing/evaluations/" + evaluationID }, status: 200,
			max: calls{"DynamoDB": 1, "DynamoDB.GetItem": 1}},

		// messages
		// the sender and the recipient, one put; announced (fan-out is
		// the message-fanout function's).
		{op: "POST /v1/agents/{slug}/messages", method: "POST", path: lit("/v1/agents/kyra/messages"), status: 201,
			body: map[string]any{"to": "luke", "type": "info_request", "content": "budget?"}, max: calls{"DynamoDB": 3, "EventBridge": 1},
			then: func(r map[string]any) { agentMsgID = str(r, "id") }},
		// a page, its unread entries marked read in one transaction.
		{op: "GET /v1/agents/{slug}/inbox", method: "GET", path: lit("/v1/agents/luke/inbox"), status: 200, max: calls{"DynamoDB": 2, "DynamoDB.Query": 1},
			before: func() { waitInbox(t, e, d.id, "luke", agentMsgID) }},
		// the agent, one write for all the entries named.
		{op: "POST /v1/agents/{slug}/inbox/read", method: "POST", path: lit("/v1/agents/luke/inbox/read"), status: 200,
			body: func() any { return map[string]any{"message_ids": []string{agentMsgID}} }, max: dynamo(2)},

		// memories
		// the agent, one put; announced (invalidation is the
		// memory-invalidator function's).
		{op: "POST /v1/agents/{slug}/memories", method: "POST", path: lit("/v1/agents/kyra/memories"), status: 201,
			body: map[string]any{"content": "budgets are per operation", "visibility": "shared"}, max: calls{"DynamoDB": 2, "EventBridge": 1}},
		// the agent, the recent memories.
		{op: "GET /v1/agents/{slug}/memories", method: "GET", path: lit("/v1/agents/kyra/memories"), status: 200, max: dynamo(2)},

		{op: "POST /v1/agents/{slug}/archive", method: "POST", path: lit("/v1/agents/budgie/archive"), status: 200, max: calls{"DynamoDB": 2, "EventBridge": 1}},
	}

	table := runSteps(t, api, d.id, steps)

	// The delegated child ran on the delegation machine: each step of it
	// is held to its own budget.
	svc, _ := taskService(t, e)
	child := waitTask(t, svc, d.id, ch, 60*time.Second)
	require.Equal(t, tasks.Completed, child.Status, child.Error)
	all, _ := invocations(t, start, "", d.id)
	byStep := map[string][]invocation{}
	for _, inv := range all {
		if inv.TaskID != ch {
			continue
		}
		name := inv.Function
		if inv.Action != "" {
			name += " " + inv.Action
		}
		byStep[name] = append(byStep[name], inv)
	}
	for _, st := range []struct {
		name string
		max  calls
	}{
		{"task-lifecycle start", transition},
		// the task (its deadline), the attempt's start and end recorded on
		// the task (each a read and a transaction), the agent, and the
		// model (one Converse call). Then
		// what the agent is told beyond the payload: the task record (its
		// type, priority, input artifacts; one read, and one query of its
		// conversation's last messages when it has one, not here) and the
		// assignee's memory context, which this run builds (the cached
		// context, the epoch, the recent memories, and the context cached:
		// one transaction); a cached context is the one read. The agent is
		// read with its team (one Query: the roster) and its unread inbox
		// (one Query). The model call is charged to the team's budget:
		// the team's first of the month (charged).
		{"task-worker", charged(calls{"DynamoDB": 12, "DynamoDB.TransactWriteItems": 3, "BedrockRuntime": 1}, 1, true)},
		{"task-lifecycle complete", transition},
	} {
		list := byStep[st.name]
		require.Len(t, list, 1, "%s ran once (%v)", st.name, byStep)
		if st.name == "task-worker" {
			// and the watch's read that the task still runs, one per
			// second the attempt ran (a loaded machine's outlasts one).
			st.max = maps.Clone(st.max)
			st.max["DynamoDB"] += watchReads(list[0])
		}
		within(t, st.name, list[0].Calls, st.max)
		table = append(table, measured{op: st.name, calls: list[0].Calls})
	}

	// The gated task's approval steps: blocked (a transition, its slot
	// given back), the approval stored with its token (one put) and
	// announced, and taken back (a transition, a slot taken again).
	gated := waitTask(t, svc, d.id, aprTask, 60*time.Second)
	require.Equal(t, tasks.Completed, gated.Status, gated.Error)
	all, _ = invocations(t, start, "", d.id)
	aprSteps := map[string][]invocation{}
	for _, inv := range all {
		if inv.TaskID == aprTask && inv.Action != "" {
			aprSteps[inv.Function+" "+inv.Action] = append(aprSteps[inv.Function+" "+inv.Action], inv)
		}
	}
	for _, st := range []struct {
		name string
		max  calls
	}{
		{"task-lifecycle block_for_approval", transition},
		{"task-lifecycle request_approval", calls{"DynamoDB": 1, "DynamoDB.PutItem": 1, "EventBridge": 1}},
		{"task-lifecycle resume_approved", transition},
	} {
		list := aprSteps[st.name]
		require.Len(t, list, 1, "%s ran once (%v)", st.name, aprSteps)
		within(t, st.name, list[0].Calls, st.max)
		table = append(table, measured{op: st.name, calls: list[0].Calls})
	}

	// Queue consumers, per record: a direct message fanned out (the
	// message, its recipient checked again — it may have been archived
	// since — and one conditional put per recipient, so a redelivered
	// event writes nothing twice), a shared memory's invalidation (the
	// team's agents, one transaction), every event recorded (one put).
	perRecord := func(function string, max calls) {
		var list []invocation
		deadline := time.Now().Add(30 * time.Second)
		for len(list) == 0 && time.Now().Before(deadline) {
			list, _ = invocations(t, start, function, d.id)
			time.Sleep(200 * time.Millisecond)
		}
		require.NotEmpty(t, list, "%s ran for the team", function)
		for _, inv := range list {
			scaled := calls{}
			for k, v := range max {
				scaled[k] = v * atLeastOne(inv.Records)
			}
			within(t, function, inv.Calls, scaled)
		}
		table = append(table, measured{op: function + " (per record)", calls: list[0].Calls, extra: fmt.Sprintf("%d record(s)", list[0].Records)})
	}
	perRecord("message-fanout", calls{"DynamoDB": 3})
	perRecord("memory-invalidator", calls{"DynamoDB": 2, "DynamoDB.TransactWriteItems": 1})
	perRecord("activity-recorder", calls{"DynamoDB": 1})
	// A task's, report's or session's end linked to a conversation: the
	// record read, the conversation read (its version and its stream's
	// last number: the message's ResultPosted event is numbered under that
	// version), one transaction (the marker, the message and its event,
	// the conversation's count, version and event_seq); any other status
	// change reads nothing.
	perRecord("result-poster", calls{"DynamoDB": 3, "DynamoDB.GetItem": 2, "DynamoDB.TransactWriteItems": 1})
	var posting invocation
	require.Eventually(t, func() bool {
		list, _ := invocations(t, start, "result-poster", d.id)
		for _, inv := range list {
			if inv.Calls["DynamoDB.TransactWriteItems"] > 0 {
				posting = inv
				return true
			}
		}
		return false
	}, 30*time.Second, 200*time.Millisecond, "the linked task's result was posted")
	table = append(table, measured{op: "result-poster (the linked task's end posted)", calls: posting.Calls, extra: fmt.Sprintf("%d record(s)", posting.Records)})

	// The sweeper: one query per index shard, then per task it ends a
	// status change (and its execution stopped).
	before := lastSeq(t)
	out, err := invokeFunction(t, e, "task-sweeper", `{"source":"aws.events","detail-type":"Scheduled Event"}`)
	require.NoError(t, err)
	var swept struct {
		TimedOut         int `json:"timed_out"`
		SessionsTimedOut int `json:"sessions_timed_out"`
		Overdue          int `json:"overdue"`
		PlansFailed      int `json:"plans_failed"`
		CardsFetched     int `json:"cards_fetched"`
		SessionsStarted  int `json:"sessions_started"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &swept))
	sweeps, _ := invocations(t, before, "task-sweeper", "")
	require.Len(t, sweeps, 1)
	// One query per shard of the tasks' deadline index, one of the
	// sessions', one of the sessions left planning (the reconciler), one
	// of the tasks' due entries and one of the plans' backstops; then per task or session ended its writes, and per task
	// flagged overdue one transaction (the flag, its events, the
	// escalation) and TaskOverdue; one query of the A2A agents whose card
	// is due, and per card fetched its credential read (and the agent
	// written). No plan is past its hour here.
	require.Zero(t, swept.PlansFailed)
	n := swept.TimedOut + swept.SessionsTimedOut + swept.Overdue
	within(t, "task-sweeper", sweeps[0].Calls, calls{"DynamoDB.Query": 13, "DynamoDB.TransactWriteItems": n, "EventBridge": n, "SFN": n + swept.SessionsStarted, "SecretsManager": swept.CardsFetched,
		"DynamoDB": 1 << 20 /* plus one read per task or session due, and a team's board policy */})
	table = append(table, measured{op: "task-sweeper", calls: sweeps[0].Calls, extra: fmt.Sprintf("%d swept", n)})

	for _, r := range table {
		t.Log(r)
	}
}

// Total is the invocation's calls, every service.
func (inv invocation) Total() int {
	n := 0
	for _, c := range inv.Calls {
		n += c
	}
	return n
}

// atLeastOne counts a batch without records (a probe) as one.
func atLeastOne(n int) int { return max(1, n) }

// waitInbox waits until the message reached the agent's inbox (fan-out is
// asynchronous), reading the store directly so no API call is counted.
func waitInbox(t *testing.T, e env, team, agent, msgID string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		list, _, err := e.db.inbox.ListInbox(context.Background(), team, agent, false, paging.Page{Limit: 100})
		require.NoError(t, err)
		for _, m := range list {
			if m.ID == msgID {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("message %s did not reach %s's inbox", msgID, agent)
}
