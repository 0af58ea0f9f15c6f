//go:build integration

// model_tier on a delegation and `auto`, and result_artifacts of the
// tools that make reports, messages and clipboard entries (issue 43, item
// 6), over HTTP on the local cloud; TestModelTierAndResultArtifactsOverHTTP
// covers task creation, memories and sub-tasks.
package cloud_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// POST /v1/tasks/{id}/delegate takes model_tier as POST /v1/tasks does:
// tier_2 is stored on the sub-task, auto (or none) stores the tier the
// sub-task's complexity picks, never "auto"; tier_3 is 400 naming
// model_tier and delegates nothing; another team's key does not find the
// parent to delegate from, nor the sub-task.
func TestADelegationTakesAModelTier(t *testing.T) {
	e := mustEnv(t)
	d, other := mustDemoTeam(t, e), mustDemoTeam(t, e)
	st, parent := d.call("POST", "/v1/tasks", map[string]any{"assignee": "luke", "created_by_agent": "kyra", "title": "Audit the auth module"})
	require.Equal(t, 201, st, parent)
	pid := parent["id"].(string)
	require.Equal(t, 200, first(d.call("POST", "/v1/tasks/"+pid+"/start", nil)))
	delegate := func(team demoTeam, body map[string]any) (int, map[string]any) {
		body["assignee"], body["execute"] = "dana", false
		return team.call("POST", "/v1/tasks/"+pid+"/delegate", body)
	}
	children := func() []string {
		st, subs := d.call("GET", "/v1/tasks?parent_task_id="+pid, nil)
		require.Equal(t, 200, st, subs)
		var out []string
		for _, it := range subs["items"].([]any) {
			out = append(out, it.(map[string]any)["id"].(string))
		}
		return out
	}

	st, sub := delegate(d, map[string]any{"title": "Check the expiry handling", "model_tier": "tier_2"})
	require.Equal(t, 201, st, sub)
	assert.Equal(t, "tier_2", sub["model_tier"])
	assert.Equal(t, pid, sub["parent_task_id"])
	assert.Equal(t, "tier_2", d.task(sub["id"].(string))["model_tier"], "stored")

	title, instructions := "Summarize", "Say which file the key is read from."
	want := tasks.AutoTier(tasks.Task{Title: title, Instructions: instructions})
	require.Contains(t, []string{routing.Tier0, routing.Tier1, routing.Tier2}, want)
	for _, tier := range []any{"auto", nil} {
		body := map[string]any{"title": title, "instructions": instructions}
		if tier != nil {
			body["model_tier"] = tier
		}
		st, sub = delegate(d, body)
		require.Equal(t, 201, st, sub)
		assert.Equal(t, want, sub["model_tier"], "%v: the complexity's tier", tier)
		assert.Equal(t, want, d.task(sub["id"].(string))["model_tier"], "%v", tier)
	}
	made := children()
	require.Len(t, made, 3)

	for _, tier := range []any{"tier_3", "Tier_1", "", 2} {
		st, bad := delegate(d, map[string]any{"title": "Check the expiry handling", "model_tier": tier})
		if tier == "" {
			// Empty is absent: the complexity's tier.
			require.Equal(t, 201, st, bad)
			made = children()
			continue
		}
		require.Equal(t, 400, st, "%v: %v", tier, bad)
		assert.Equal(t, "model_tier", bad["error"].(map[string]any)["field"], "%v: %v", tier, bad)
	}
	assert.Equal(t, made, children(), "the refused delegations wrote nothing")

	st, theirs := delegate(other, map[string]any{"title": "Not yours", "model_tier": "tier_1"})
	assert.Equal(t, 404, st, "another team's parent: %v", theirs)
	st, theirs = other.call("GET", "/v1/tasks/"+sub["id"].(string), nil)
	assert.Equal(t, 404, st, "another team's sub-task: %v", theirs)
	assert.Equal(t, made, children(), "nothing delegated for another team")
}

// An executed task's result_artifacts name what its tool calls made: a
// report it requested (the report's id, not its task's), a message it
// sent, a clipboard entry it stored (clipboard:<scope>/<key>: a value has
// no id); each is what the team reads at that id. A call that fails adds
// nothing.
func TestResultArtifactsNameReportsMessagesAndClipboardEntries(t *testing.T) {
	e := mustEnv(t)
	d, other := mustDemoTeam(t, e), mustDemoTeam(t, e)
	st, res := d.call("POST", "/v1/agents", map[string]any{"slug": "keeper", "name": "Keeper",
		"skills": []any{map[string]any{"name": "notes", "description": "keeps the team's notes"}}})
	require.Equal(t, 201, st, res)
	run := func(body map[string]any) (map[string]any, []string) {
		t.Helper()
		body["assignee"], body["execute"] = "keeper", true
		st, tk := d.call("POST", "/v1/tasks", body)
		require.Equal(t, 201, st, tk)
		done := d.awaitTask(tk["id"].(string))
		require.Equal(t, "completed", done["status"], done)
		return done, strs(done["result_artifacts"])
	}

	_, arts := run(map[string]any{"title": "Ask for background",
		"instructions": `[call:request_report {"to_agent":"dana","report_type":"research_summary","title":"Key rotation","parameters":{"topic":"JWT key rotation"}}]`})
	require.Len(t, arts, 1)
	require.True(t, strings.HasPrefix(arts[0], "rep_"), arts)
	st, rep := d.call("GET", "/v1/reports/"+arts[0], nil)
	require.Equal(t, 200, st, rep)
	assert.Equal(t, "Key rotation", rep["title"])
	st, rep = other.call("GET", "/v1/reports/"+arts[0], nil)
	assert.Equal(t, 404, st, "another team's report: %v", rep)

	_, arts = run(map[string]any{"title": "Tell luke",
		"instructions": `[call:send_agent_message {"to_agent":"luke","message":"The signing key moved to KMS","message_type":"info_request"}]`})
	require.Len(t, arts, 1)
	require.True(t, strings.HasPrefix(arts[0], "amsg_"), arts)
	// The inbox entry is the message-fanout consumer's, after the event
	// (bus, rule, queue): it arrives after the task ends.
	var inbox map[string]any
	assert.Eventually(t, func() bool {
		st, got := d.call("GET", "/v1/agents/luke/inbox", nil)
		require.Equal(t, 200, st, got)
		inbox = got
		return slices.ContainsFunc(got["items"].([]any), func(m any) bool { return m.(map[string]any)["id"] == arts[0] })
	}, 15*time.Second, 200*time.Millisecond, "luke's inbox holds %s: %v", arts[0], inbox)

	done, arts := run(map[string]any{"title": "Keep the algorithm", "tool_packs": []any{"bridging"},
		"instructions": `[call:clipboard_store {"key":"signing.alg","value":"RS256"}]`})
	require.Len(t, arts, 1)
	assert.True(t, strings.HasPrefix(arts[0], "clipboard:"), arts)
	assert.True(t, strings.HasSuffix(arts[0], "/signing.alg"), arts)
	assert.Contains(t, arts[0], done["id"], "the task's own plan scope")

	// A call the schema refuses makes nothing.
	_, arts = run(map[string]any{"title": "Tell nobody",
		"instructions": `[call:send_agent_message {"to_agent":"Luke!","message":"hi"}]`})
	assert.Empty(t, arts)
}
