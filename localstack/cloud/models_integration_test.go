//go:build integration

package cloud_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// ungranted is a well-formed Bedrock model id the local stage does not
// offer: in AWS its grants would not name it, and Bedrock would refuse
// every reply of an agent given it.
const ungranted = "anthropic.claude-3-opus-20240229-v1:0"

// Over HTTP on the local cloud: GET /v1/models answers the local stage's
// models (the routing tiers' and LocalExtraModels, through the Bedrock
// adapter the edge answers); an agent created or changed to a model the
// stage does not offer is 400 naming model.id with nothing stored, while
// the models the integration tests give agents (a tier's, the priced one
// through the local provider, a script alone) are accepted; an agent
// stored before is listed by ?misconfigured=true.
func TestAgentsGetTheModelsTheLocalStageOffers(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	team, key, err := teams.NewService(e.db.teams).CreateTeam(ctx, "models")
	require.NoError(t, err)
	api := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: key.Secret, T: t}
	require.NotEmpty(t, api.Base)

	// GIVEN the local stage WHEN its models are asked for
	resp := api.Do("GET", "/v1/models", nil)
	require.Equal(t, 200, resp.Status, string(resp.Body))
	// THEN they are the tiers' in tier order, then the extra one
	type offer struct{ provider, id, tier any }
	var got []offer
	for _, it := range resp.JSON(t)["items"].([]any) {
		o := it.(map[string]any)
		got = append(got, offer{o["provider"], o["model_id"], o["tier"]})
		assert.Equal(t, true, o["streaming"], o["model_id"])
		assert.NotNil(t, o["input_usd_per_1k_tokens"], "%v: every local model is priced", o["model_id"])
	}
	tiers := routing.DefaultTierModels
	assert.Equal(t, []offer{
		{cloud.LocalModelProvider, tiers[routing.Tier0], routing.Tier0},
		{cloud.LocalModelProvider, tiers[routing.Tier1], routing.Tier1},
		{cloud.LocalModelProvider, tiers[routing.Tier2], routing.Tier2},
		{cloud.LocalModelProvider, cloud.LocalExtraModels, nil},
	}, got)
	// AND they need a key, as every route
	assert.Equal(t, 401, apitest.Client{Base: api.Base, T: t}.Do("GET", "/v1/models", nil).Status)

	agent := func(slug string, model map[string]any) map[string]any {
		return map[string]any{"slug": slug, "name": slug, "model": model,
			"skills": []map[string]any{{"name": "testing", "description": "answers test tasks"}}}
	}
	// WHEN an agent is created with a model the stage does not grant
	resp = api.Do("POST", "/v1/agents", agent("opus", map[string]any{"provider": "bedrock", "id": ungranted}))
	// THEN it is refused naming model.id, and nothing is stored
	require.Equal(t, 400, resp.Status, string(resp.Body))
	_, field, _ := resp.ErrorFields(t)
	assert.Equal(t, "model.id", field)
	assert.Equal(t, 404, api.Do("GET", "/v1/agents/opus", nil).Status)

	// The models the integration tests give agents are offered.
	for slug, model := range map[string]map[string]any{
		"sonnet":  {"provider": "local", "id": tiers[routing.Tier2], "script": "tools:1"},
		"priced":  {"provider": "local", "id": cloud.LocalExtraModels},
		"bedrock": {"id": tiers[routing.Tier0]},
		"script":  {"provider": "local", "script": "fail"},
	} {
		resp = api.Do("POST", "/v1/agents", agent(slug, model))
		require.Equal(t, 201, resp.Status, "%s: %s", slug, resp.Body)
	}
	// A PATCH to a model the stage does not offer is refused too.
	resp = api.Do("PATCH", "/v1/agents/bedrock", map[string]any{"model": map[string]any{"id": ungranted}})
	require.Equal(t, 400, resp.Status, string(resp.Body))
	_, field, _ = resp.ErrorFields(t)
	assert.Equal(t, "model.id", field)
	assert.Equal(t, tiers[routing.Tier0], api.Do("GET", "/v1/agents/bedrock", nil).JSON(t)["model"].(map[string]any)["id"])

	// GIVEN an agent stored with a model the stage no longer offers
	_, err = agents.NewService(e.db.agents).Create(ctx, team.ID, agents.CreateInput{Slug: "legacy", Name: "Legacy",
		Model: &agents.Model{Provider: "bedrock", ID: ungranted}})
	require.NoError(t, err)
	// WHEN the misconfigured agents are listed THEN it alone is
	resp = api.Do("GET", "/v1/agents?misconfigured=true", nil)
	require.Equal(t, 200, resp.Status, string(resp.Body))
	var slugs []any
	for _, it := range resp.JSON(t)["items"].([]any) {
		slugs = append(slugs, it.(map[string]any)["slug"])
	}
	assert.Equal(t, []any{"legacy"}, slugs)
	// AND it keeps working: an update that leaves its model is accepted
	resp = api.Do("PATCH", "/v1/agents/legacy", map[string]any{"tagline": "still here"})
	require.Equal(t, 200, resp.Status, string(resp.Body))
	assert.Equal(t, ungranted, resp.JSON(t)["model"].(map[string]any)["id"])
}
