//go:build integration

package cloud_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// The team's classifier end to end (issue 42): agents written through the
// API announce AgentsChanged on the bus, the agents-changed rule queues
// it, the classifier-fitter fits the team's classifier and stores it, and
// GET /v1/routing/calibration reports it current with its cross-validated
// quality; a change of examples makes it pending until the next fit; the
// gate routes with it; another team sees none of it.
func TestTheClassifierIsFittedWhenTheAgentsChange(t *testing.T) {
	e := mustEnv(t)
	api, other := apiTeam(t, e, "classifier"), apiTeam(t, e, "classifier")
	agent := func(slug, skill, desc string, examples ...string) {
		r := api.Do("POST", "/v1/agents", map[string]any{"slug": slug, "name": slug, "skills": []any{
			map[string]any{"name": skill, "description": desc, "examples": examples}}})
		require.Equal(t, 201, r.Status, string(r.Body))
	}
	agent("host", "small-talk", "Greetings and general questions", "hi there", "good morning", "how are you?", "thanks a lot", "who are you?")
	agent("gardener", "plant-care", "Looks after plants", "my tomato leaves are yellow", "how often should I water basil?",
		"what fertilizer do roses need?", "when should I prune the apple tree?", "slugs are eating my lettuce", "how do I repot a cactus?")
	agent("mechanic", "car-repair", "Fixes cars", "my car makes a grinding noise when braking", "the engine light is on",
		"how often should I change the oil?", "my tyre keeps losing air")
	require.Equal(t, 200, api.Do("PUT", "/v1/team/default-agent", map[string]any{"slug": "host"}).Status)

	report := func(c apitest.Client) map[string]any {
		r := c.Do("GET", "/v1/routing/calibration", nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		return r.JSON(t)
	}
	current := func() map[string]any {
		var rep map[string]any
		require.Eventually(t, func() bool {
			rep = report(api)
			return rep["classifier"].(map[string]any)["status"] == "current"
		}, 90*time.Second, 500*time.Millisecond, "the classifier-fitter fits on AgentsChanged")
		return rep
	}
	rep := current()
	cls := rep["classifier"].(map[string]any)
	assert.EqualValues(t, 3, cls["skills"])
	assert.NotNil(t, cls["fitted_at"])
	cv := cls["cross_validation"].(map[string]any)
	assert.EqualValues(t, 15, cv["examples"])
	assert.EqualValues(t, 5, cv["folds"])
	skills := rep["skills"].([]any)
	require.Len(t, skills, 3)
	assert.Equal(t, map[string]any{"agent": "mechanic", "skill": "car-repair", "examples": 4.0}, skills[0], "the fewest examples first")
	assert.Len(t, rep["warnings"], 1, "the mechanic has fewer than five: %v", rep["warnings"])

	// Another team: none of this team's agents or classifier.
	o := report(other)
	assert.Empty(t, o["skills"])
	assert.Equal(t, "none", o["classifier"].(map[string]any)["status"])

	// New examples: pending until the next fit, then current again.
	r := api.Do("PATCH", "/v1/agents/mechanic", map[string]any{"skills": []any{map[string]any{"name": "car-repair", "description": "Fixes cars",
		"examples": []string{"my car makes a grinding noise when braking", "the engine light is on", "how often should I change the oil?",
			"my tyre keeps losing air", "the battery died overnight"}}}})
	require.Equal(t, 200, r.Status, string(r.Body))
	// Pending until the new fit is stored (a fit of this team takes
	// milliseconds: it may be stored already), then current with a later
	// fitted_at.
	fitted := cls["fitted_at"]
	require.Eventually(t, func() bool {
		rep = report(api)
		c := rep["classifier"].(map[string]any)
		return c["status"] == "current" && c["fitted_at"] != fitted
	}, 90*time.Second, 300*time.Millisecond, "fitted again for the new examples")
	assert.Empty(t, rep["warnings"])

	// The gate routes with it: an everyday question in none of the
	// examples' words reaches the gardener.
	c := api.Do("POST", "/v1/conversations", map[string]any{"title": "classifier"})
	require.Equal(t, 201, c.Status, string(c.Body))
	turn := api.Do("POST", "/v1/conversations/"+c.JSON(t)["id"].(string)+"/messages", map[string]any{"content": "the leaves on my cucumber plant are going brown"})
	require.Equal(t, 201, turn.Status, string(turn.Body))
	routingOf := turn.JSON(t)["routing"].(map[string]any)
	assert.Equal(t, []any{"gardener"}, routingOf["selected_agents"], string(turn.Body))
	assert.Equal(t, "plant-care", routingOf["skill"])
}

// apiTeam is a fresh team and an API client holding its key.
func apiTeam(t *testing.T, e env, name string) apitest.Client {
	t.Helper()
	_, k, err := teams.NewService(e.db.teams).CreateTeam(context.Background(), name)
	require.NoError(t, err)
	return apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: k.Secret, T: t}
}
