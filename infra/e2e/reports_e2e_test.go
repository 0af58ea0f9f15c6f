//go:build e2e

package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReportTemplatesOverHTTP(t *testing.T) {
	me, _ := clients(t)
	r := me.do("GET", "/v1/report-templates", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	types := map[string]bool{}
	for _, it := range r.JSON(t)["items"].([]any) {
		tmpl := it.(map[string]any)
		types[tmpl["type"].(string)] = true
		assert.NotEmpty(t, tmpl["required_sections"])
		assert.NotEmpty(t, tmpl["json_schema"])
		assert.Contains(t, []any{"tier_1", "tier_2"}, tmpl["model_tier"])
	}
	assert.Len(t, types, 8)
}

func TestReportRequestedAndReadOverHTTP(t *testing.T) {
	me, _ := clients(t)
	author, asker, bystander := mkAgent(t, me, "rauth"), mkAgent(t, me, "rask"), mkAgent(t, me, "rby")
	r := me.do("POST", "/v1/reports", map[string]any{
		"type": "code_review", "to": author, "from": asker, "title": "Review the auth module",
		"parameters": map[string]any{"files": []string{"src/auth/"}, "focus": []string{"security"}}, "max_sections": 5,
	})
	require.Equal(t, 201, r.Status, string(r.Body))
	rep := r.JSON(t)
	assert.Equal(t, "queued", rep["status"])
	assert.Equal(t, "tier_2", rep["model_tier"], "a code review is complex")

	got := me.do("GET", "/v1/reports/"+rep["id"].(string)+"?wait=25", nil)
	require.Equal(t, 200, got.Status)
	done := got.JSON(t)
	require.Equal(t, "completed", done["status"], string(got.Body))
	var names []string
	for _, s := range done["sections"].([]any) {
		names = append(names, s.(map[string]any)["name"].(string))
	}
	assert.Subset(t, names, []string{"summary", "findings", "severity_breakdown", "recommendations"})
	assert.LessOrEqual(t, len(names), 5)

	task := me.do("GET", "/v1/tasks/"+done["task_id"].(string), nil).JSON(t)
	assert.Equal(t, "review", task["type"])
	assert.Equal(t, "completed", task["status"])

	memID := done["memory_id"].(string)
	for agent, sees := range map[string]bool{author: true, asker: true, bystander: false} {
		list := me.do("GET", "/v1/agents/"+agent+"/memories", nil)
		require.Equal(t, 200, list.Status)
		assert.Equal(t, sees, containsID(list.JSON(t)["items"], memID), agent)
	}
	listed := me.do("GET", "/v1/reports?type=code_review&to="+author+"&status=completed", nil)
	require.Equal(t, 200, listed.Status)
	assert.Len(t, listed.JSON(t)["items"], 1)
}

func containsID(items any, id string) bool {
	list, _ := items.([]any)
	for _, it := range list {
		if it.(map[string]any)["id"] == id {
			return true
		}
	}
	return false
}

func TestReportInputErrorsNameTheField(t *testing.T) {
	me, _ := clients(t)
	author := mkAgent(t, me, "rval")
	base := map[string]any{"type": "comparison", "to": author, "title": "x", "parameters": map[string]any{"options": []string{"a", "b"}, "criteria": []string{"c"}}}
	for _, c := range []struct {
		key   string
		value any
		field string
	}{
		{"type", "poem", "type"},
		{"parameters", []string{"a"}, "parameters"},
		{"max_sections", 11, "max_sections"},
		{"format", "pdf", "format"},
		{"format", "bullet_points", "format"},
	} {
		body := map[string]any{}
		for k, v := range base {
			body[k] = v
		}
		body[c.key] = c.value
		r := me.do("POST", "/v1/reports", body)
		assert.Equal(t, 400, r.Status, string(r.Body))
		_, field, _ := r.ErrorFields(t)
		assert.Equal(t, c.field, field)
	}
	paused := mkAgent(t, me, "rnap")
	require.Equal(t, 200, me.do("POST", "/v1/agents/"+paused+"/pause", nil).Status)
	base["to"] = paused
	r := me.do("POST", "/v1/reports", base)
	assert.Equal(t, 409, r.Status)
	_, _, reason := r.ErrorFields(t)
	assert.Equal(t, "AgentUnavailable", reason)
	for _, a := range []string{author, paused} {
		assert.Empty(t, me.do("GET", "/v1/reports?to="+a, nil).JSON(t)["items"], "bad input wrote nothing")
		assert.Empty(t, me.do("GET", "/v1/tasks?assignee="+a, nil).JSON(t)["items"])
	}
}

func TestReportsAreInvisibleToOtherTeamsAndIdempotent(t *testing.T) {
	me, other := clients(t)
	author := mkAgent(t, me, "riso")
	body := map[string]any{"type": "action_plan", "to": author, "title": "SSO", "parameters": map[string]any{"goal": "ship SSO"}}
	key := "report-" + author
	first := me.do("POST", "/v1/reports", body, "Idempotency-Key", key)
	require.Equal(t, 201, first.Status, string(first.Body))
	again := me.do("POST", "/v1/reports", body, "Idempotency-Key", key)
	assert.Equal(t, first.Body, again.Body)
	assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	assert.Len(t, me.do("GET", "/v1/reports?to="+author, nil).JSON(t)["items"], 1)

	id := first.JSON(t)["id"].(string)
	assert.Equal(t, 404, other.do("GET", "/v1/reports/"+id, nil).Status)
	assert.NotContains(t, string(other.do("GET", "/v1/reports?limit=100", nil).Body), id)
	assert.Equal(t, 404, other.do("POST", "/v1/reports", body).Status, "another team's agent is not found")
	assert.Equal(t, 200, me.do("GET", "/v1/reports/"+id+"?wait=25", nil).Status)
}
