//go:build integration

// Kind skills against the local cloud (docs/skills.md): a message routed
// to an agent because of a report:<type> skill requests that report, one
// routed by a session:<pattern> skill starts that session, each through
// the conversations function's tools with the conversation linked; the
// outcome is posted back by the result-poster.
package cloud_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// setSkill PATCHes slug's only skill with the fields of edit.
func (d demoTeam) setSkill(slug string, edit map[string]any) {
	d.t.Helper()
	st, a := d.call("GET", "/v1/agents/"+slug, nil)
	require.Equal(d.t, 200, st, a)
	sk := a["skills"].([]any)[0].(map[string]any)
	for k, v := range edit {
		sk[k] = v
	}
	st, a = d.call("PATCH", "/v1/agents/"+slug, map[string]any{"skills": []any{sk}})
	require.Equal(d.t, 200, st, a)
}

func TestAReportSkillRequestsItsReportFromAChatTurn(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.setSkill("luke", map[string]any{"kind": "report:code_review"})
	conv := d.conversation("")
	turn := d.post(conv, map[string]any{"content": "Can you review this Go function for bugs?"})
	r := agentReply(t, turn)
	assert.Equal(t, "luke", r["agent"])
	assert.Equal(t, []string{"request_report"}, toolNames(r))
	require.Len(t, r["pending"], 1, r)
	rep := r["pending"].([]any)[0].(map[string]any)
	assert.Equal(t, "report", rep["type"])
	st, got := d.call("GET", "/v1/reports/"+rep["id"].(string), nil)
	require.Equal(t, 200, st, got)
	assert.Equal(t, "code_review", got["type"])
	assert.Equal(t, conv, got["conversation_id"])
	assert.Equal(t, "luke", got["to"])
	assert.Equal(t, "user", got["requested_by"].(map[string]any)["type"], "the user's request, written by the agent its skill chose")
	posted := d.awaitPosted(conv, r["id"].(string), rep["id"].(string))
	assert.Equal(t, "luke", posted["agent"])
	assert.Equal(t, "completed", posted["result_of"].(map[string]any)["status"])
}

func TestASessionSkillStartsItsSessionFromAChatTurn(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.setSkill("luke", map[string]any{"kind": "session:brainstorm", "domains": []string{"software", "security"}})
	conv := d.conversation("")
	r := agentReply(t, d.post(conv, map[string]any{"content": "Can you review this Go function for bugs?"}))
	assert.Equal(t, "luke", r["agent"])
	assert.Equal(t, []string{"start_collaboration"}, toolNames(r))
	require.Len(t, r["pending"], 1, r)
	ses := r["pending"].([]any)[0].(map[string]any)
	assert.Equal(t, "session", ses["type"])
	st, s := d.call("GET", "/v1/sessions/"+ses["id"].(string), nil)
	require.Equal(t, 200, st, s)
	assert.Equal(t, "brainstorm", s["pattern"])
	assert.Equal(t, "luke", s["lead"])
	assert.Equal(t, conv, s["conversation_id"])
	var parts []string
	for _, p := range s["participants"].([]any) {
		parts = append(parts, p.(map[string]any)["agent"].(string))
	}
	// The colleagues sharing the skill's domains, then those the gate
	// found matching the message, at most three; never the lead.
	assert.Subset(t, parts, []string{"archie", "sage"})
	assert.LessOrEqual(t, len(parts), 3)
	assert.NotContains(t, parts, "luke")
	posted := d.awaitPosted(conv, r["id"].(string), ses["id"].(string))
	assert.Equal(t, "luke", posted["agent"], "the session's lead")
	assert.Equal(t, "completed", posted["result_of"].(map[string]any)["status"])
}
