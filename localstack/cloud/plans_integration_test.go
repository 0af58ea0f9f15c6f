//go:build integration

package cloud_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/shared/store/planstore"
	"github.com/conclave-ai/conclave/shared/work/plans"
)

// planMarker is the local model's scripted plan (localmodel.PlanOpen).
func planMarker(steps string) string {
	return `[[plan]]{"is_compound":true,"reasoning":"scripted","steps":[` + steps + `]}[[/plan]]`
}

const threeStepPlan = `{"step_id":1,"target":"luke/code-review","sub_query":"Review the payment handler for bugs","depends_on":[]},
	{"step_id":2,"target":"sage/security-review","sub_query":"Check the payment handler for security issues","depends_on":[]},
	{"step_id":3,"target":"wren/writing","sub_query":"Write release notes for the fixes","depends_on":[1,2]}`

func (d demoTeam) waitPlan(id string, within time.Duration) map[string]any {
	d.t.Helper()
	var p map[string]any
	require.Eventually(d.t, func() bool {
		st, got := d.call("GET", "/v1/plans/"+id, nil)
		require.Equal(d.t, 200, st, got)
		p = got
		return p["status"] != "running"
	}, within, 250*time.Millisecond, "plan %s ends", id)
	return p
}

func pendingPlan(t *testing.T, turn map[string]any) string {
	t.Helper()
	reply := lastReply(t, turn)
	pending, _ := reply["pending"].([]any)
	require.Len(t, pending, 1, "the plan is the reply's pending work: %v", reply)
	ref := pending[0].(map[string]any)
	require.Equal(t, "plan", ref["type"])
	return ref["id"].(string)
}

func (d demoTeam) decisionOf(turn map[string]any) map[string]any {
	d.t.Helper()
	id := turn["routing"].(map[string]any)["id"].(string)
	st, dec := d.call("GET", "/v1/routing/decisions/"+id, nil)
	require.Equal(d.t, 200, st, dec)
	return dec
}

// A three-step message plans: two steps with no dependency in the first
// round, the third after them with both results bridged into its context;
// the lead's synthesis arrives in the conversation as the plan's result,
// naming its contributors; the plan is one root task with three children.
func TestAThreeStepMessageRunsAsAPlan(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("kyra")
	turn := d.post(conv, map[string]any{"content": "Review the payment handler for bugs and security issues, then write release notes " + planMarker(threeStepPlan)})
	assert.Equal(t, "kyra", lastReply(t, turn)["agent"])
	id := pendingPlan(t, turn)
	dec := d.decisionOf(turn)
	planner := dec["planner"].(map[string]any)
	assert.Equal(t, "planned", planner["outcome"])
	assert.Equal(t, id, planner["plan_id"])
	assert.Contains(t, planner["trigger"], "multi-step")

	p := d.waitPlan(id, 90*time.Second)
	require.Equal(t, "completed", p["status"], p)
	steps := p["steps"].([]any)
	require.Len(t, steps, 3)
	at := func(i int, k string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, steps[i].(map[string]any)[k].(string))
		require.NoError(t, err)
		return v
	}
	assert.True(t, !at(2, "started_at").Before(at(0, "completed_at")) && !at(2, "started_at").Before(at(1, "completed_at")),
		"step 3 starts after both steps it depends on")
	assert.True(t, at(0, "started_at").Before(at(1, "completed_at")) && at(1, "started_at").Before(at(0, "completed_at")),
		"steps 1 and 2 run in the same round, side by side")
	third := d.task(steps[2].(map[string]any)["task_id"].(string))
	assert.Contains(t, third["context"], "prior_step_1_response: ")
	assert.Contains(t, third["context"], "prior_step_2_response: ")
	assert.Equal(t, p["root_task_id"], third["parent_task_id"])
	assert.EqualValues(t, 1, third["delegation_depth"])
	root := d.task(p["root_task_id"].(string))
	assert.Equal(t, "completed", root["status"])

	var answer map[string]any
	require.Eventually(t, func() bool {
		for _, m := range d.messages(conv) {
			if ref, ok := m["result_of"].(map[string]any); ok && ref["id"] == id {
				answer = m
				return true
			}
		}
		return false
	}, 30*time.Second, 250*time.Millisecond, "the synthesis is posted into the conversation")
	assert.Equal(t, "kyra", answer["agent"])
	assert.Equal(t, p["synthesis"], answer["content"])
	assert.ElementsMatch(t, []any{"luke", "sage", "wren"}, answer["contributors"])
}

// A plan the rules refuse falls back to single dispatch, and the decision
// log says why; a message that does not look compound asks no planner.
func TestInvalidPlansFallBackAndSingleIntentsAreNotPlanned(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("kyra")
	five := threeStepPlan + `,{"step_id":4,"target":"archie/architecture","sub_query":"x","depends_on":[]},{"step_id":5,"target":"dana/data-analysis","sub_query":"y","depends_on":[]}`
	cycle := `{"step_id":1,"target":"luke/code-review","sub_query":"a","depends_on":[2]},{"step_id":2,"target":"wren/writing","sub_query":"b","depends_on":[1]}`
	for name, tc := range map[string]struct{ steps, why string }{
		"five steps": {five, "over the cap of 4"},
		"a cycle":    {cycle, "cycle"},
		"a made-up skill": {`{"step_id":1,"target":"luke/poetry","sub_query":"a","depends_on":[]},{"step_id":2,"target":"wren/writing","sub_query":"b","depends_on":[1]}`,
			`agent "luke" has no skill "poetry"`},
	} {
		turn := d.post(conv, map[string]any{"content": "Review the handler, then write the notes " + planMarker(tc.steps)})
		reply := lastReply(t, turn)
		assert.Empty(t, reply["pending"], name)
		assert.NotEmpty(t, reply["content"], "%s: answered by single dispatch", name)
		planner := d.decisionOf(turn)["planner"].(map[string]any)
		assert.Equal(t, "fallback", planner["outcome"], name)
		assert.Contains(t, planner["reason"], tc.why, name)
	}
	turn := d.post(conv, map[string]any{"content": "Can you review this Go function for bugs? " + planMarker(threeStepPlan)})
	_, asked := d.decisionOf(turn)["planner"]
	assert.False(t, asked, "no sequencing words and one confident agent: no planner call")
	st, list := d.call("GET", "/v1/plans?limit=50", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, list["items"], "no plan started")
}

// A failed step fails the step that depends on it; the other runs, and
// the plan ends partial with the synthesis saying what is missing.
func TestAFailedStepEndsThePlanPartial(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "sage", "fail")
	conv := d.conversation("kyra")
	turn := d.post(conv, map[string]any{"content": "Review the handler, then write the notes " + planMarker(threeStepPlan)})
	id := pendingPlan(t, turn)
	p := d.waitPlan(id, 120*time.Second)
	require.Equal(t, "partial", p["status"], p)
	var statuses []string
	for _, s := range p["steps"].([]any) {
		statuses = append(statuses, s.(map[string]any)["status"].(string))
	}
	assert.Equal(t, []string{"completed", "failed", "skipped"}, statuses)
	assert.True(t, strings.Contains(fmt.Sprint(p["synthesis"]), "@") || p["synthesis"] != "", "the lead still answers with what succeeded")
}

// The plans routes keep their AWS call budgets: a listing and a read are
// one DynamoDB call each; a cancel reads the plan, stops its execution,
// writes it cancelled, cancels its running step and its root (each a
// read, a conditional write and its event; the step's execution stopped,
// its waiter, the plan's execution, sent the step's end), looks for the
// slot tickets it left, stops the plan's execution, and announces the
// end (PlanCompleted: the conversation is told).
func TestAWSCallBudgetsPlans(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	api := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}
	d.script(e, "sage", "timeout")
	conv := d.conversation("kyra")
	turn := d.post(conv, map[string]any{"content": "Review the handler, then write the notes " + planMarker(threeStepPlan)})
	id := pendingPlan(t, turn)
	require.Eventually(t, func() bool {
		_, p := d.call("GET", "/v1/plans/"+id, nil)
		return p["steps"].([]any)[1].(map[string]any)["status"] == "running" && p["steps"].([]any)[0].(map[string]any)["status"] == "completed"
	}, 60*time.Second, 250*time.Millisecond, "luke's step done, sage's hanging")
	lit := func(s string) func() string { return func() string { return s } }
	steps := []step{
		{op: "GET /v1/plans", method: "GET", path: lit("/v1/plans"), status: 200, max: calls{"DynamoDB": 1}},
		{op: "GET /v1/plans/{id}", method: "GET", path: lit("/v1/plans/" + id), status: 200, max: calls{"DynamoDB": 1}},
		{op: "POST /v1/plans/{id}/cancel", method: "POST", path: lit("/v1/plans/" + id + "/cancel"), status: 200,
			max: calls{"DynamoDB": 8, "DynamoDB.TransactWriteItems": 3, "EventBridge": 3, "SFN": 3, "SFN.StopExecution": 2}},
	}
	runSteps(t, api, d.id, steps)
	p := d.waitPlan(id, 10*time.Second)
	assert.Equal(t, "cancelled", p["status"])
	assert.Equal(t, "canceled", d.task(p["root_task_id"].(string))["status"])
	assert.Equal(t, "canceled", d.task(p["steps"].([]any)[1].(map[string]any)["task_id"].(string))["status"])
}

// Plans are the team's: another team's key sees none and cancels none;
// bad input is refused naming the field, and changes nothing; a cancel
// replayed with its Idempotency-Key answers the same.
func TestPlansAreIsolatedAndRefuseBadInput(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	other := mustDemoTeam(t, e)
	d.script(e, "sage", "timeout")
	turn := d.post(d.conversation("kyra"), map[string]any{"content": "Review the handler, then write the notes " + planMarker(threeStepPlan)})
	id := pendingPlan(t, turn)

	st, res := other.call("GET", "/v1/plans/"+id, nil)
	assert.Equal(t, 404, st, res)
	st, res = other.call("POST", "/v1/plans/"+id+"/cancel", nil)
	assert.Equal(t, 404, st, res)
	st, list := other.call("GET", "/v1/plans", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, list["items"])

	st, res = d.call("GET", "/v1/plans/not-a-plan", nil)
	assert.Equal(t, 404, st, res)
	st, res = d.call("GET", "/v1/plans?limit=abc", nil)
	assert.Equal(t, 400, st, res)
	assert.Equal(t, "limit", res["error"].(map[string]any)["field"])
	_, p := d.call("GET", "/v1/plans/"+id, nil)
	assert.Equal(t, "running", p["status"], "nothing changed")

	api := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}
	first := api.Do("POST", "/v1/plans/"+id+"/cancel", nil, "Idempotency-Key", "cancel-"+id)
	require.Equal(t, 200, first.Status, string(first.Body))
	again := api.Do("POST", "/v1/plans/"+id+"/cancel", nil, "Idempotency-Key", "cancel-"+id)
	assert.Equal(t, 200, again.Status, "replayed")
	assert.JSONEq(t, string(first.Body), string(again.Body))
	st, res = d.call("POST", "/v1/plans/"+id+"/cancel", nil)
	assert.Equal(t, 409, st, "a cancelled plan cannot be cancelled again: %v", res)
}

// A step augmented with a tool pack sees the pack's tools; the step after
// it, without the pack, does not.
func TestAPlanStepsToolPackIsItsOwn(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	steps := `{"step_id":1,"target":"luke/code-review","sub_query":"Review the handler [list-tools]","depends_on":[],"tool_packs":["bridging"]},
		{"step_id":2,"target":"wren/writing","sub_query":"Write the notes [list-tools]","depends_on":[1]}`
	turn := d.post(d.conversation("kyra"), map[string]any{"content": "Review the handler, then write the notes " + planMarker(steps)})
	p := d.waitPlan(pendingPlan(t, turn), 90*time.Second)
	require.Equal(t, "completed", p["status"], p)
	first := p["steps"].([]any)[0].(map[string]any)["output"].(string)
	second := p["steps"].([]any)[1].(map[string]any)["output"].(string)
	assert.Contains(t, first, "summarize_text", "the pack's tools are offered to its step")
	assert.Contains(t, first, "extract_structured_data")
	assert.NotContains(t, second, "summarize_text", "the next step does not get them")
	assert.Contains(t, second, "Tools offered", "the second step listed its tools too")
}

// Running plans are in the sweeper's index on the table from their
// creation until they end, due at their backstop (the plan machine's
// timeout and a grace); an ended plan leaves it.
func TestRunningPlansAreInTheSweepersIndex(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "sage", "timeout")
	turn := d.post(d.conversation("kyra"), map[string]any{"content": "Review the handler, then write the notes " + planMarker(threeStepPlan)})
	id := pendingPlan(t, turn)
	store := planstore.New(e.db.core.DB, e.names.Table())
	p, err := store.GetPlan(context.Background(), d.id, id)
	require.NoError(t, err)
	ref := plans.Ref{TeamID: d.id, ID: id}
	due, err := store.DuePlans(context.Background(), p.Due(), 1000)
	require.NoError(t, err)
	assert.NotContains(t, due, ref, "not due before its backstop")
	// Due at its backstop. A step that ends meanwhile (luke's, on a busy
	// machine) moves the backstop: then the plan is read again and its
	// new backstop checked (a few times at most).
	for try := 0; ; try++ {
		due, err = store.DuePlans(context.Background(), p.Due().Add(time.Millisecond), 1000)
		require.NoError(t, err)
		if slices.Contains(due, ref) {
			break
		}
		again, err := store.GetPlan(context.Background(), d.id, id)
		require.NoError(t, err)
		require.True(t, try < 3 && !again.Due().Equal(p.Due()), "due at its backstop %v (read again: %v, %s)", p.Due(), again.Due(), again.Status)
		p = again
	}

	st, res := d.call("POST", "/v1/plans/"+id+"/cancel", nil)
	require.Equal(t, 200, st, res)
	due, err = store.DuePlans(context.Background(), p.Due().Add(time.Hour), 1000)
	require.NoError(t, err)
	assert.NotContains(t, due, ref, "an ended plan leaves the index")
}

// A report as a plan step: report:<type> is written by the agent of the
// team's skill of that kind, as a report of the task model (its template,
// its sections) whose task is the step under the plan's root; the next
// step reads it bridged. A session as a step falls back, saying why.
func TestAReportIsAPlanStep(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	st, res := d.call("POST", "/v1/agents", map[string]any{"slug": "scribe", "name": "Scribe",
		"skills": []any{map[string]any{"name": "summaries", "description": "writes research summaries", "kind": "report:research_summary"}}})
	require.Equal(t, 201, st, res)
	conv := d.conversation("kyra")
	steps := `{"step_id":1,"target":"report:research_summary","sub_query":"Summarize what we know about payment retries","depends_on":[]},
	{"step_id":2,"target":"wren/writing","sub_query":"Write release notes from the summary","depends_on":[1]}`
	turn := d.post(conv, map[string]any{"content": "Summarize the payment retries, then write release notes " + planMarker(steps)})
	id := pendingPlan(t, turn)
	p := d.waitPlan(id, 90*time.Second)
	require.Equal(t, "completed", p["status"], p)
	first := p["steps"].([]any)[0].(map[string]any)
	assert.Equal(t, "scribe", first["agent"], "the writer of the report type")
	assert.Equal(t, "research_summary", first["report"])
	require.NotEmpty(t, first["report_id"])
	st, rep := d.call("GET", "/v1/reports/"+first["report_id"].(string), nil)
	require.Equal(t, 200, st, rep)
	assert.Equal(t, "completed", rep["status"], rep)
	assert.Equal(t, "research_summary", rep["type"])
	assert.Equal(t, first["task_id"], rep["task_id"])
	assert.Equal(t, p["root_task_id"], rep["parent_task_id"])
	assert.NotEmpty(t, rep["sections"])
	second := d.task(p["steps"].([]any)[1].(map[string]any)["task_id"].(string))
	assert.Contains(t, second["context"], "prior_step_1_response: ")

	session := `{"step_id":1,"target":"session:brainstorm","sub_query":"ideas","depends_on":[]},
	{"step_id":2,"target":"wren/writing","sub_query":"notes","depends_on":[1]}`
	turn = d.post(conv, map[string]any{"content": "Brainstorm ideas, then write notes " + planMarker(session)})
	planner := d.decisionOf(turn)["planner"].(map[string]any)
	assert.Equal(t, "fallback", planner["outcome"])
	assert.Contains(t, planner["reason"], "not a plan step")
}
