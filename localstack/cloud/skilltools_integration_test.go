//go:build integration

package cloud_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/team/agents"
)

// A skill's tools belong to it (seed 003), through the local API: luke's
// second skill declares search_memories and his code review declares none,
// so a code question the gate gives his code review is answered without
// it (his script, recall, calls it whenever it is offered), while a
// mention, which matches no skill, offers every skill's tools.
func TestTheMatchedSkillsToolsAreTheOnesOffered(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	ctx := context.Background()
	svc := agents.NewService(e.db.agents)
	luke, err := svc.Get(ctx, d.id, "luke")
	require.NoError(t, err)
	skills := append([]agents.Skill{}, luke.Skills...)
	skills[0].Tools = nil
	skills = append(skills, agents.Skill{Name: "release-notes", Description: "Draft changelogs from merged pull requests", Tools: []string{"search_memories"}})
	_, err = svc.Update(ctx, d.id, "luke", agents.UpdateInput{Skills: &skills, Model: &agents.Model{Provider: "local", ID: sonnet, Script: "recall"}})
	require.NoError(t, err)

	tools := func(query string) (int, map[string]any) { return d.call("GET", "/v1/agents/luke/tools"+query, nil) }
	names := func(out map[string]any) []string {
		var n []string
		for _, t := range out["tools"].([]any) {
			n = append(n, t.(map[string]any)["name"].(string))
		}
		return n
	}
	st, review := tools("?skill=code-review")
	require.Equal(t, 200, st, review)
	assert.Equal(t, "code-review", review["skill"])
	assert.NotContains(t, names(review), "search_memories")
	assert.Contains(t, names(review), "delegate_task", "the collaboration tools stay")
	st, notes := tools("?skill=release-notes&context=task")
	require.Equal(t, 200, st, notes)
	assert.Contains(t, names(notes), "search_memories")
	st, all := tools("")
	require.Equal(t, 200, st, all)
	assert.Contains(t, names(all), "search_memories")
	assert.Nil(t, all["skill"])
	// Bad input names the field; another team does not see luke's skills.
	for _, q := range []string{"?skill=cooking", "?skill="} {
		st, out := tools(q)
		assert.Equal(t, 400, st, q)
		assert.Equal(t, "skill", out["error"].(map[string]any)["field"], q)
	}
	other := mustDemoTeam(t, e)
	st, _ = other.call("GET", "/v1/agents/luke/tools?skill=release-notes", nil)
	assert.Equal(t, 400, st, "the other team's luke has no such skill")
	// An agent of this team alone: another team does not find it.
	st, res := d.call("POST", "/v1/agents", map[string]any{"slug": "archivist", "name": "Archivist",
		"skills": []any{map[string]any{"name": "archives", "description": "keeps the team's archives", "tools": []string{"search_memories"}}}})
	require.Equal(t, 201, st, res)
	st, res = d.call("GET", "/v1/agents/archivist/tools?skill=archives", nil)
	require.Equal(t, 200, st, res)
	assert.Contains(t, names(res), "search_memories")
	st, res = other.call("GET", "/v1/agents/archivist/tools?skill=archives", nil)
	assert.Equal(t, 404, st, "another team's agent is not found: %v", res)
	assert.NotContains(t, fmt.Sprint(res), "search_memories")

	conv := d.conversation("kyra")
	turn := d.post(conv, map[string]any{"content": "Can you review this Go function for bugs?"})
	r := lastReply(t, turn)
	require.Equal(t, "luke", r["agent"])
	require.Equal(t, "code-review", turn["routing"].(map[string]any)["skill"], turn["routing"])
	assert.Empty(t, r["tool_calls"], "search_memories is not the code review's")

	r = lastReply(t, d.post(conv, map[string]any{"content": "@luke what did we decide about retries?"}))
	require.Equal(t, "luke", r["agent"])
	calls, _ := r["tool_calls"].([]any)
	require.NotEmpty(t, calls, "a mention matches no skill: every skill's tools")
	assert.Equal(t, "search_memories", calls[0].(map[string]any)["tool"])
}
