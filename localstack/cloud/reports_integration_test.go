//go:build integration

// Reports against the local cloud: HTTP through the edge, each report's
// task run by the delegation state machine (moto calling the Go handlers),
// the local model following the template in the task's instructions, and
// the report finished by the report-finalizer function fed by the
// TaskStatusChanged rule and queue.
package cloud_test

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	conclaveevents "github.com/conclave-ai/conclave/events"
	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/shared/team/activity"
	"github.com/conclave-ai/conclave/shared/work/reports"
)

// reportParams are valid parameters of every type.
var reportParams = map[string]map[string]any{
	"code_review":        {"files": []string{"src/auth/"}, "focus": []string{"security"}},
	"security_audit":     {"scope": []string{"the login API"}, "compliance": []string{"OWASP ASVS"}},
	"research_summary":   {"topic": "JWT best practices", "audience": "the platform team"},
	"data_analysis":      {"dataset": "signups.csv", "question": "why did signups drop in May?"},
	"risk_assessment":    {"subject": "moving the database to another region"},
	"performance_report": {"system": "the checkout API", "metrics": []string{"latency p99"}},
	"comparison":         {"options": []string{"Redis", "Memcached"}, "criteria": []string{"speed", "features"}},
	"action_plan":        {"goal": "ship SSO by March"},
}

// agent creates an agent of the team answering through the local model
// with script ("" for none).
func (d demoTeam) agent(slug, script string, status string) {
	d.t.Helper()
	body := map[string]any{"slug": slug, "name": slug, "skills": []any{map[string]any{"name": "reports", "description": "writes reports"}}}
	if script != "" {
		body["model"] = map[string]any{"provider": "local", "script": script}
	}
	if status != "" {
		body["status"] = status
	}
	st, res := d.call("POST", "/v1/agents", body)
	require.Equal(d.t, 201, st, res)
}

func (d demoTeam) report(body map[string]any) map[string]any {
	d.t.Helper()
	st, r := d.call("POST", "/v1/reports", body)
	require.Equal(d.t, 201, st, r)
	require.Equal(d.t, "queued", r["status"])
	return r
}

// waitReport long-polls a report until it has ended (60 s at most).
func (d demoTeam) waitReport(id string) map[string]any {
	d.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, r := d.call("GET", "/v1/reports/"+id+"?wait=20", nil)
		require.Equal(d.t, 200, st, r)
		if reports.Status(r["status"].(string)).Terminal() || time.Now().After(deadline) {
			require.True(d.t, reports.Status(r["status"].(string)).Terminal(), "report %s still %s", id, r["status"])
			return r
		}
	}
}

func sectionNames(r map[string]any) []string {
	out := []string{}
	for _, s := range r["sections"].([]any) {
		out = append(out, s.(map[string]any)["name"].(string))
	}
	return out
}

// Every type, in every format its template supports, comes back valid:
// each required section there and non-empty, json sections with their
// structured value, the task a review or analyze task of the template's
// model tier, the memory written.
func TestReportsOfEveryTypeInEveryFormat(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	st, list := d.call("GET", "/v1/report-templates", nil)
	require.Equal(t, 200, st, list)
	require.Len(t, list["items"], len(reports.Types))

	type want struct {
		tmpl   reports.Template
		format string
	}
	requested := map[string]want{}
	for i, typ := range reports.Types {
		author := fmt.Sprintf("author-%d", i)
		d.agent(author, "", "")
		tmpl := reports.Templates[typ]
		for _, format := range tmpl.Formats {
			r := d.report(map[string]any{"type": typ, "to": author, "from": "kyra", "title": typ + " in " + format,
				"format": format, "parameters": reportParams[typ]})
			assert.Equal(t, tmpl.ModelTier, r["model_tier"], typ)
			requested[r["id"].(string)] = want{tmpl, format}
		}
	}
	require.Len(t, requested, 23, "8 types × 3 formats, but a comparison has no bullet points")

	for id, w := range requested {
		r := d.waitReport(id)
		name := w.tmpl.Type + "/" + w.format
		require.Equal(t, "completed", r["status"], "%s: %v", name, r)
		names := sectionNames(r)
		for _, s := range w.tmpl.Required {
			assert.Contains(t, names, s, name)
		}
		for _, s := range r["sections"].([]any) {
			sec := s.(map[string]any)
			assert.NotEmpty(t, sec["content"], "%s.%s", name, sec["name"])
			_, hasValue := sec["value"]
			assert.Equal(t, w.format == reports.JSON, hasValue, "%s.%s: a structured value in json only", name, sec["name"])
		}
		assert.Empty(t, r["missing_sections"], name)
		assert.EqualValues(t, 0, r["revisions"], name)
		assert.NotEmpty(t, r["memory_id"], name)
		assert.Positive(t, r["tokens_used"], name)
		assert.Positive(t, r["cost_usd"], "%s: priced at the tier's model", name)
		st, task := d.call("GET", "/v1/tasks/"+r["task_id"].(string), nil)
		require.Equal(t, 200, st)
		assert.Equal(t, "completed", task["status"], name)
		assert.Equal(t, w.tmpl.TaskType, task["type"], name)
		assert.Equal(t, w.tmpl.ModelTier, task["model_tier"], name)
		assert.EqualValues(t, 1, task["delegation_depth"], "%s: kyra asked", name)
	}
}

// A report missing a required section gets one revision asking for
// exactly it, and then completes.
func TestReportMissingASectionIsRevisedOnceThenCompletes(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.agent("forgetful", "omit-once:findings,severity_breakdown", "")
	r := d.waitReport(d.report(map[string]any{"type": "code_review", "to": "forgetful", "from": "kyra", "title": "Review auth",
		"parameters": reportParams["code_review"]})["id"].(string))
	require.Equal(t, "completed", r["status"], r)
	assert.EqualValues(t, 1, r["revisions"])
	assert.Subset(t, sectionNames(r), []string{"summary", "findings", "severity_breakdown", "recommendations"})

	st, task := d.call("GET", "/v1/tasks/"+r["task_id"].(string), nil)
	require.Equal(t, 200, st)
	var asked []any
	for _, ev := range task["events"].([]any) {
		ev := ev.(map[string]any)
		if ev["type"] == "revision_requested" {
			asked = append(asked, ev["payload"].(map[string]any)["missing_sections"])
		}
	}
	assert.Equal(t, []any{[]any{"findings", "severity_breakdown"}}, asked, "one revision, asking for exactly those")
	assert.Equal(t, "completed", task["status"])
}

// Still missing after the revision: the report ends failed, naming the
// section, and becomes no memory; ReportFinished says so.
func TestReportStillMissingASectionFails(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.agent("stubborn", "omit:risk_matrix", "")
	for _, format := range []string{"markdown", "json", "bullet_points"} {
		r := d.waitReport(d.report(map[string]any{"type": "risk_assessment", "to": "stubborn", "from": "kyra", "title": "Region move",
			"format": format, "parameters": reportParams["risk_assessment"]})["id"].(string))
		assert.Equal(t, "failed", r["status"], format)
		assert.Equal(t, "MissingSections", r["reason"], format)
		assert.Equal(t, []string{"risk_matrix"}, strs(r["missing_sections"]), format)
		assert.Contains(t, r["error"], "risk_matrix", format)
		assert.EqualValues(t, 1, r["revisions"], format)
		assert.Empty(t, r["memory_id"], format)
	}
	en := waitActivity(t, e, d.id, func(en activity.Entry) bool {
		return en.DetailType == "ReportFinished" && detailField(t, en, "status") == "failed"
	})
	assert.NoError(t, conclaveevents.Validate(en.DetailType, en.Detail))
	assert.Equal(t, []any{"risk_matrix"}, detailField(t, en, "missing_sections"))
	st, list := d.call("GET", "/v1/reports?status=failed&to=stubborn&type=risk_assessment", nil)
	require.Equal(t, 200, st)
	assert.Len(t, list["items"], 3)
}

// A completed report is a procedural memory of its author shared with the
// agent that asked: both see it (and their next contexts hold it), no
// other agent and no other team does.
func TestReportMemoryIsVisibleToBothAgentsAndNoOtherTeam(t *testing.T) {
	e := mustEnv(t)
	d, other := mustDemoTeam(t, e), mustDemoTeam(t, e)
	conv := d.conversation("kyra")
	// kyra's context is cached before the report; its end drops it.
	st, _ := d.call("GET", "/v1/conversations/"+conv+"/context?agent=kyra", nil)
	require.Equal(t, 200, st)
	r := d.report(map[string]any{"type": "comparison", "to": "luke", "from": "kyra", "title": "Cache choice",
		"parameters": reportParams["comparison"], "conversation_id": conv})
	assert.Equal(t, conv, r["conversation_id"])
	r = d.waitReport(r["id"].(string))
	require.Equal(t, "completed", r["status"], r)
	memID := r["memory_id"].(string)

	holds := func(team demoTeam, agent string) bool {
		st, list := team.call("GET", "/v1/agents/"+agent+"/memories", nil)
		require.Equal(t, 200, st, list)
		for _, m := range list["items"].([]any) {
			if m := m.(map[string]any); m["id"] == memID {
				assert.Equal(t, "procedural", m["type"])
				assert.Equal(t, "luke", m["author"])
				assert.Equal(t, "report", m["source"])
				assert.Contains(t, m["content"], "comparison_matrix")
				return true
			}
		}
		return false
	}
	assert.True(t, holds(d, "luke"), "the author")
	assert.True(t, holds(d, "kyra"), "the requester")
	for _, s := range []string{"dana", "archie", "sage", "wren"} {
		assert.False(t, holds(d, s), s)
	}
	for _, s := range demoSlugs {
		assert.False(t, holds(other, s), "team B's %s", s)
	}
	st, c := d.call("GET", "/v1/conversations/"+conv+"/context?agent=kyra", nil)
	require.Equal(t, 200, st)
	var private []string
	for _, m := range c["memories"].(map[string]any)["private"].([]any) {
		private = append(private, m.(map[string]any)["id"].(string))
	}
	assert.Contains(t, private, memID, "kyra's next reply here can use it")
	st, task := d.call("GET", "/v1/tasks/"+r["task_id"].(string), nil)
	require.Equal(t, 200, st)
	assert.Equal(t, conv, task["conversation_id"])
}

// Bad input is a 4xx naming the problem, and writes nothing: no report,
// no task, no slot.
func TestBadReportRequestsWriteNothing(t *testing.T) {
	e := mustEnv(t)
	d, other := mustDemoTeam(t, e), mustDemoTeam(t, e)
	d.agent("napper", "", "paused")
	theirConv := other.conversation("kyra")
	good := func() map[string]any {
		return map[string]any{"type": "code_review", "to": "luke", "from": "kyra", "title": "x", "parameters": reportParams["code_review"]}
	}
	for _, c := range []struct {
		name          string
		set           map[string]any
		status        int
		field, reason string
	}{
		{"an unknown type", map[string]any{"type": "poem"}, 400, "type", ""},
		{"parameters that are not an object", map[string]any{"parameters": []string{"src/"}}, 400, "parameters", ""},
		{"parameters as a string", map[string]any{"parameters": "files=src/"}, 400, "parameters", ""},
		{"a parameter the template does not take", map[string]any{"parameters": map[string]any{"files": []string{"a"}, "colour": "red"}}, 400, "parameters.colour", ""},
		{"max_sections over 10", map[string]any{"max_sections": 11}, 400, "max_sections", ""},
		{"an unknown format", map[string]any{"format": "pdf"}, 400, "format", ""},
		{"an unknown field", map[string]any{"colour": "red"}, 400, "colour", ""},
		{"a paused author", map[string]any{"to": "napper"}, 409, "", "AgentUnavailable"},
		{"an unknown author", map[string]any{"to": "ghost"}, 404, "", ""},
		{"another team's conversation", map[string]any{"conversation_id": theirConv}, 404, "", ""},
		{"a report from oneself", map[string]any{"from": "luke"}, 400, "", "SelfDelegation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := good()
			for k, v := range c.set {
				body[k] = v
			}
			resp := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}.Do("POST", "/v1/reports", body)
			require.Equal(t, c.status, resp.Status, string(resp.Body))
			_, field, reason := resp.ErrorFields(t)
			assert.Equal(t, c.field, field)
			assert.Equal(t, c.reason, reason)
		})
	}
	st, list := d.call("GET", "/v1/reports", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, list["items"], "no report")
	st, list = d.call("GET", "/v1/tasks", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, list["items"], "no task")
	for _, s := range []string{"luke", "napper"} {
		st, load := d.call("GET", "/v1/agents/"+s+"/load", nil)
		require.Equal(t, 200, st)
		assert.EqualValues(t, 0, load["active_tasks"], s)
	}
	assert.Equal(t, 400, first(d.call("GET", "/v1/reports?status=sleeping", nil)))
	assert.Equal(t, 400, first(d.call("GET", "/v1/reports?type=poem", nil)))
	assert.Equal(t, 400, first(d.call("GET", "/v1/reports/rep_x?wait=99", nil)))
}

func first(st int, _ map[string]any) int { return st }

// A report is a task: the author's five running-or-queued tasks are the
// limit, checked by the task's creation; a canceled task cancels its
// report.
func TestReportConcurrencyLimit(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.agent("busy", "timeout", "")
	const n = 8
	statuses, reasons, tasksOf := make([]int, n), make([]string, n), make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}.Do("POST", "/v1/reports",
				map[string]any{"type": "action_plan", "to": "busy", "title": fmt.Sprintf("plan %d", i), "parameters": reportParams["action_plan"]})
			statuses[i] = resp.Status
			if resp.Status == 201 {
				tasksOf[i] = resp.JSON(t)["task_id"].(string)
			} else {
				_, _, reasons[i] = resp.ErrorFields(t)
			}
		}()
	}
	wg.Wait()
	created, limited := 0, 0
	for i, s := range statuses {
		switch {
		case s == 201:
			created++
		case s == 429 && reasons[i] == "ConcurrencyLimit":
			limited++
		}
	}
	assert.Equal(t, 5, created, "five running-or-queued tasks per author")
	assert.Equal(t, n-5, limited)
	st, list := d.call("GET", "/v1/reports?to=busy", nil)
	require.Equal(t, 200, st)
	assert.Len(t, list["items"], 5, "a refused request wrote no report")
	for _, id := range tasksOf {
		if id != "" {
			st, _ := d.call("POST", "/v1/tasks/"+id+"/cancel", map[string]any{"reason": "test over"})
			require.Equal(t, 200, st)
		}
	}
	for _, it := range list["items"].([]any) {
		r := d.waitReport(it.(map[string]any)["id"].(string))
		assert.Equal(t, "canceled", r["status"])
		assert.Equal(t, "TaskEnded", r["reason"])
		assert.Equal(t, "test over", r["error"])
	}
}

// The depth of the delegation chain and cycles are refused by the report
// task's creation, as for any delegation.
func TestReportDelegationDepthAndCycle(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	// kyra → luke → dana → sage (board tasks, running): depth 3.
	st, t1 := d.call("POST", "/v1/tasks", map[string]any{"assignee": "luke", "created_by_agent": "kyra", "title": "Audit"})
	require.Equal(t, 201, st, t1)
	chain := []string{t1["id"].(string)}
	require.Equal(t, 200, first(d.call("POST", "/v1/tasks/"+chain[0]+"/start", nil)))
	for _, a := range []string{"dana", "sage"} {
		st, tk := d.call("POST", "/v1/tasks/"+chain[len(chain)-1]+"/delegate", map[string]any{"assignee": a, "title": "part", "execute": false})
		require.Equal(t, 201, st, tk)
		chain = append(chain, tk["id"].(string))
		require.Equal(t, 200, first(d.call("POST", "/v1/tasks/"+tk["id"].(string)+"/start", nil)))
	}
	ask := func(to, parent string) (int, map[string]any) {
		return d.call("POST", "/v1/reports", map[string]any{"type": "research_summary", "to": to, "parent_task_id": parent,
			"title": "Background", "parameters": map[string]any{"topic": "OAuth"}})
	}
	st, res := ask("archie", chain[2])
	assert.Equal(t, 422, st, res)
	assert.Equal(t, "DelegationDepthExceeded", res["error"].(map[string]any)["reason"])
	st, res = ask("kyra", chain[1])
	assert.Equal(t, 422, st, res)
	assert.Equal(t, "CycleDetected", res["error"].(map[string]any)["reason"])
	st, res = ask("archie", chain[1])
	require.Equal(t, 201, st, res)
	assert.Equal(t, "dana", res["from"], "the parent's assignee asks")
	st, task := d.call("GET", "/v1/tasks/"+res["task_id"].(string), nil)
	require.Equal(t, 200, st)
	assert.EqualValues(t, 3, task["delegation_depth"])
	assert.Equal(t, chain[1], task["parent_task_id"])
	assert.Equal(t, "completed", d.waitReport(res["id"].(string))["status"])
}

// An agent working on a task asks for a report with the request_report
// tool (the same service): the report's task is its delegation, the
// worker waits for it in the state machine, and the answer carries it.
func TestReportRequestedByAWorkingAgent(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.agent("lead", "report:luke", "")
	st, parent := d.call("POST", "/v1/tasks", map[string]any{"assignee": "lead", "title": "Brief the team", "instructions": "JWT rotation", "execute": true})
	require.Equal(t, 201, st, parent)
	st, done := d.call("GET", "/v1/tasks/"+parent["id"].(string)+"?wait=25", nil)
	require.Equal(t, 200, st)
	require.Equal(t, "completed", done["status"], done)
	st, list := d.call("GET", "/v1/reports?from=lead", nil)
	require.Equal(t, 200, st)
	require.Len(t, list["items"], 1)
	r := d.waitReport(list["items"].([]any)[0].(map[string]any)["id"].(string))
	assert.Equal(t, "completed", r["status"], r)
	assert.Equal(t, "research_summary", r["type"])
	assert.Equal(t, parent["id"], r["parent_task_id"])
	assert.Contains(t, done["result"], "Report: task "+r["task_id"].(string)+" by luke completed", "the delegated report came back into the answer")
	assert.Contains(t, done["result"], "## executive_summary")
}

// Another team's report is not found and not listed; a repeated POST with
// the same Idempotency-Key returns the first report and creates nothing.
func TestReportsAreIsolatedAndIdempotent(t *testing.T) {
	e := mustEnv(t)
	d, other := mustDemoTeam(t, e), mustDemoTeam(t, e)
	base := os.Getenv("CONCLAVE_BASE_URL")
	me := apitest.Client{Base: base, Key: d.key, T: t}
	body := map[string]any{"type": "action_plan", "to": "wren", "from": "kyra", "title": "SSO", "parameters": reportParams["action_plan"]}
	first := me.Do("POST", "/v1/reports", body, "Idempotency-Key", "report-once")
	require.Equal(t, 201, first.Status, string(first.Body))
	again := me.Do("POST", "/v1/reports", body, "Idempotency-Key", "report-once")
	assert.Equal(t, 201, again.Status)
	assert.Equal(t, first.Body, again.Body)
	assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	body["title"] = "Another"
	reused := me.Do("POST", "/v1/reports", body, "Idempotency-Key", "report-once")
	assert.Equal(t, 409, reused.Status)
	_, _, reason := reused.ErrorFields(t)
	assert.Equal(t, "IdempotencyKeyReused", reason)
	st, list := d.call("GET", "/v1/reports?to=wren", nil)
	require.Equal(t, 200, st)
	assert.Len(t, list["items"], 1, "one report")
	st, tasks := d.call("GET", "/v1/tasks?assignee=wren", nil)
	require.Equal(t, 200, st)
	assert.Len(t, tasks["items"], 1, "one task")

	id := first.JSON(t)["id"].(string)
	r := d.waitReport(id)
	st, _ = other.call("GET", "/v1/reports/"+id, nil)
	assert.Equal(t, 404, st)
	st, _ = other.call("GET", "/v1/reports/"+id+"?wait=1", nil)
	assert.Equal(t, 404, st)
	st, theirs := other.call("GET", "/v1/reports?limit=100", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, theirs["items"])
	st, _ = other.call("GET", "/v1/tasks/"+r["task_id"].(string), nil)
	assert.Equal(t, 404, st, "nor its task")

	// Pagination like every listing.
	for i := range 2 {
		d.report(map[string]any{"type": "action_plan", "to": "archie", "title": fmt.Sprint("p", i), "parameters": reportParams["action_plan"]})
	}
	seen := []string{}
	token := ""
	for range 10 {
		path := "/v1/reports?limit=2"
		if token != "" {
			path += "&next_token=" + token
		}
		st, page := d.call("GET", path, nil)
		require.Equal(t, 200, st, page)
		for _, it := range page["items"].([]any) {
			id := it.(map[string]any)["id"].(string)
			assert.False(t, slices.Contains(seen, id))
			seen = append(seen, id)
		}
		token, _ = page["next_token"].(string)
		if token == "" {
			break
		}
	}
	assert.Len(t, seen, 3, "every report once")
}
