//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// skillAgentBody is an agent whose skills use every execution field.
func skillAgentBody(slug string) map[string]any {
	return map[string]any{
		"slug": slug, "name": "Skills " + slug,
		"skills": []any{
			map[string]any{"name": "code-review", "description": "reviews code", "domains": []string{"code"}, "tools": []string{"search_memories"},
				"system_prompt": "Review line by line.", "context_loaders": []string{"open_tasks", "team_roster"}, "public": true},
			map[string]any{"name": "audit", "description": "writes a security audit", "domains": []string{"security"}, "kind": "report:security_audit"},
			map[string]any{"name": "ideas", "description": "brainstorms with colleagues", "domains": []string{"ideas"}, "kind": "session:brainstorm", "internal_only": true},
		},
	}
}

// The registry lists the team's skills with their agent, filters them, and
// shows one with its system prompt; the skills are stored with the agent.
func TestSkillRegistry(t *testing.T) {
	me, _ := clients(t)
	slug := uniqueSlug("skills")
	r := me.do("POST", "/v1/agents", skillAgentBody(slug))
	require.Equal(t, 201, r.Status, string(r.Body))
	sk := r.JSON(t)["skills"].([]any)
	assert.Equal(t, "chat", sk[0].(map[string]any)["kind"], "chat is the default kind")
	assert.Equal(t, true, sk[0].(map[string]any)["public"])

	list := me.do("GET", "/v1/skills?agent="+slug, nil)
	require.Equal(t, 200, list.Status, string(list.Body))
	items := list.JSON(t)["items"].([]any)
	require.Len(t, items, 3)
	first := items[0].(map[string]any)
	assert.Equal(t, slug, first["agent"])
	assert.Equal(t, "code-review", first["name"])
	assert.Equal(t, []any{"open_tasks", "team_roster"}, first["context_loaders"])
	assert.NotContains(t, first, "system_prompt", "the listing leaves it to the skill's own route")
	assert.Equal(t, true, items[2].(map[string]any)["internal_only"])

	for filter, want := range map[string][]string{
		"&kind=report":              {"audit"},
		"&kind=session:brainstorm":  {"ideas"},
		"&kind=chat":                {"code-review"},
		"&domain=security":          {"audit"},
		"&tool=search_memories":     {"code-review"},
		"&domain=code&kind=session": {},
	} {
		r := me.do("GET", "/v1/skills?agent="+slug+filter, nil)
		require.Equal(t, 200, r.Status, filter+": "+string(r.Body))
		got := []string{}
		for _, it := range r.JSON(t)["items"].([]any) {
			got = append(got, it.(map[string]any)["name"].(string))
		}
		assert.Equal(t, want, got, filter)
	}

	one := me.do("GET", "/v1/skills/"+slug+"/code-review", nil)
	require.Equal(t, 200, one.Status, string(one.Body))
	assert.Equal(t, "Review line by line.", one.JSON(t)["system_prompt"])
	assert.Equal(t, 404, me.do("GET", "/v1/skills/"+slug+"/nope", nil).Status)
	assert.Equal(t, 404, me.do("GET", "/v1/skills/no-such-agent-x/code-review", nil).Status)

	// The whole registry pages by agent and holds these skills once.
	seen, token := 0, ""
	for pages := 0; pages < 200; pages++ {
		r := me.do("GET", "/v1/skills?limit=5&next_token="+token, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		body := r.JSON(t)
		for _, it := range body["items"].([]any) {
			if it.(map[string]any)["agent"] == slug {
				seen++
			}
		}
		token, _ = body["next_token"].(string)
		if token == "" {
			break
		}
	}
	assert.Equal(t, 3, seen)
}

// Another team's skills are invisible, and its agent is 404.
func TestAnotherTeamsSkillsAreInvisible(t *testing.T) {
	me, other := clients(t)
	slug := uniqueSlug("secret")
	require.Equal(t, 201, me.do("POST", "/v1/agents", skillAgentBody(slug)).Status)
	r := other.do("GET", "/v1/skills/"+slug+"/code-review", nil)
	assert.Equal(t, 404, r.Status)
	code, _, _ := r.ErrorFields(t)
	assert.Equal(t, "not_found", code)
	list := other.do("GET", "/v1/skills?agent="+slug, nil)
	require.Equal(t, 200, list.Status)
	assert.Empty(t, list.JSON(t)["items"])
	assert.NotContains(t, string(other.do("GET", "/v1/skills?limit=100", nil).Body), slug)
}

// A bad execution field is a 400 naming it, and nothing is written.
func TestBadSkillFieldsNameTheFieldAndWriteNothing(t *testing.T) {
	me, _ := clients(t)
	cases := []struct {
		name  string
		edit  func(skill map[string]any)
		field string
	}{
		{"unknown kind", func(s map[string]any) { s["kind"] = "workflow" }, "skills[0].kind"},
		{"unknown report type", func(s map[string]any) { s["kind"] = "report:haiku" }, "skills[0].kind"},
		{"unknown session pattern", func(s map[string]any) { s["kind"] = "session:debate" }, "skills[0].kind"},
		{"unknown loader", func(s map[string]any) { s["context_loaders"] = []string{"weather"} }, "skills[0].context_loaders"},
		{"long system prompt", func(s map[string]any) { s["system_prompt"] = strings.Repeat("x", 4001) }, "skills[0].system_prompt"},
		{"public not a boolean", func(s map[string]any) { s["public"] = "yes" }, "skills[0].public"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			slug := uniqueSlug("badskill")
			body := skillAgentBody(slug)
			c.edit(body["skills"].([]any)[0].(map[string]any))
			r := me.do("POST", "/v1/agents", body)
			require.Equal(t, 400, r.Status, string(r.Body))
			code, field, _ := r.ErrorFields(t)
			assert.Equal(t, "invalid_request", code)
			assert.Equal(t, c.field, field)
			assert.Equal(t, 404, me.do("GET", "/v1/agents/"+slug, nil).Status, "nothing was written")
		})
	}
	// A PATCH refused changes nothing either.
	slug := uniqueSlug("patchskill")
	require.Equal(t, 201, me.do("POST", "/v1/agents", skillAgentBody(slug)).Status)
	r := me.do("PATCH", "/v1/agents/"+slug, map[string]any{"skills": []any{map[string]any{"name": "x-y", "description": "d", "kind": "report:nope"}}})
	require.Equal(t, 400, r.Status, string(r.Body))
	_, field, _ := r.ErrorFields(t)
	assert.Equal(t, "skills[0].kind", field)
	got := me.do("GET", "/v1/agents/"+slug, nil).JSON(t)
	assert.Equal(t, float64(1), got["version"])
	assert.Len(t, got["skills"], 3)
	// A bad filter names it.
	r = me.do("GET", "/v1/skills?kind=report:haiku", nil)
	require.Equal(t, 400, r.Status, string(r.Body))
	_, field, _ = r.ErrorFields(t)
	assert.Equal(t, "kind", field)
}

// A skill's examples through the API: stored trimmed, shown on the
// agent's and the skill's reads, counted in lists, refused past their
// limits with the field named and nothing created, another team's 404,
// and used by the gate: the message shares no word with the skill's
// description, only with its examples' meaning.
func TestSkillExamples(t *testing.T) {
	me, other := clients(t)
	slug := uniqueSlug("garden")
	body := func(examples []string) map[string]any {
		return map[string]any{"slug": slug, "name": "Gardener " + slug, "skills": []any{
			map[string]any{"name": "plant-care", "description": "Looks after the office's greenery", "examples": examples}}}
	}
	examples := []string{"  my tomato plants have yellow leaves ", "how often should I water basil?", "what fertilizer do roses need?",
		"when should I prune the apple tree?", "slugs are eating my lettuce", "how do I repot a cactus?"}
	for _, bad := range [][]string{
		{"water the ferns", "Water the ferns"},        // alike
		{"fine", "   "},                               // blank
		{strings.Repeat("x", 201)},                    // too long
		append(examples[:1:1], make([]string, 30)...), // 31
	} {
		r := me.do("POST", "/v1/agents", body(bad))
		require.Equal(t, 400, r.Status, string(r.Body))
		_, field, _ := r.ErrorFields(t)
		assert.Equal(t, "skills[0].examples", field)
		assert.Equal(t, 404, me.do("GET", "/v1/agents/"+slug, nil).Status, "nothing created")
	}
	r := me.do("POST", "/v1/agents", body(examples), "Idempotency-Key", "examples-"+slug)
	require.Equal(t, 201, r.Status, string(r.Body))
	t.Cleanup(func() { me.do("POST", "/v1/agents/"+slug+"/archive", nil) })
	want := append([]any{"my tomato plants have yellow leaves"}, anys(examples[1:])...)
	assert.Equal(t, want, r.JSON(t)["skills"].([]any)[0].(map[string]any)["examples"])
	again := me.do("POST", "/v1/agents", body(examples), "Idempotency-Key", "examples-"+slug)
	assert.Equal(t, 201, again.Status, "the same create replayed: %s", again.Body)

	one := me.do("GET", "/v1/skills/"+slug+"/plant-care", nil)
	require.Equal(t, 200, one.Status, string(one.Body))
	assert.Equal(t, want, one.JSON(t)["examples"])
	list := me.do("GET", "/v1/skills?agent="+slug, nil)
	require.Equal(t, 200, list.Status)
	entry := list.JSON(t)["items"].([]any)[0].(map[string]any)
	assert.NotContains(t, entry, "examples")
	assert.EqualValues(t, len(examples), entry["example_count"])
	assert.Equal(t, 404, other.do("GET", "/v1/skills/"+slug+"/plant-care", nil).Status)

	// The gate ranks the gardener first on its examples' meaning.
	rec := me.do("GET", "/v1/agents/recommend?query=the+leaves+on+my+cucumber+plant+are+going+brown", nil)
	require.Equal(t, 200, rec.Status, string(rec.Body))
	items := rec.JSON(t)["items"].([]any)
	require.NotEmpty(t, items)
	assert.Equal(t, slug, items[0].(map[string]any)["slug"], string(rec.Body))
}

func anys(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}
