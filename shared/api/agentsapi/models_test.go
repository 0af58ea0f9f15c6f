package agentsapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/api/agentsapi"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
)

// stage offers the routing defaults and one extra model on Bedrock.
var stage = models.Catalog{Provider: "bedrock",
	Tiers: map[string]string{"tier_0": "amazon.nova-micro-v1:0", "tier_1": "anthropic.claude-3-5-haiku-20241022-v1:0", "tier_2": "anthropic.claude-3-5-sonnet-20240620-v1:0"},
	Extra: []string{"amazon.nova-pro-v1:0", "example.unpriced-v1:0"}}

// newRouter is the agents and models routes as the agents function wires
// them (shared/wire/agentsfn): the service offers stage's models, over
// the in-memory store holding the demo team.
func newRouter(t *testing.T) (*httpapi.Router, *memstore.Store) {
	t.Helper()
	store := memstore.New()
	require.NoError(t, demo.Seed(context.Background(), store))
	svc := agents.NewService(store)
	svc.Models = stage
	rt := httpapi.NewRouter(slog.New(slog.NewTextHandler(io.Discard, nil))).WithIdempotency(store)
	rt.Bodies = api.BodyRoutes()
	agentsapi.AgentRoutes(rt, svc)
	agentsapi.ModelRoutes(rt, stage)
	return rt, store
}

// call serves one request as API Gateway sends it; team "" is a request
// without the authorizer's team (no key).
func call(rt *httpapi.Router, team, method, route, path string, query map[string]string, body any) (int, map[string]any) {
	raw := ""
	if body != nil {
		b, _ := json.Marshal(body)
		raw = string(b)
	}
	rc := events.APIGatewayV2HTTPRequestContext{RequestID: "req-models",
		HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path}}
	if team != "" {
		rc.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"team_id": team, "key_id": "key_test"}}
	}
	ev := events.APIGatewayV2HTTPRequest{RouteKey: route, RawPath: path, Body: raw, QueryStringParameters: query, RequestContext: rc}
	if slug, ok := strings.CutPrefix(path, "/v1/agents/"); ok {
		ev.PathParameters = map[string]string{"slug": slug}
	}
	resp, _ := rt.Serve(context.Background(), ev)
	out := map[string]any{}
	_ = json.Unmarshal([]byte(resp.Body), &out)
	return resp.StatusCode, out
}

// GET /v1/models answers the stage's models: the tiers' in tier order,
// then the extra ones, each with its provider, tier (null for an extra
// model), price per 1,000 tokens (null when unpriced) and streaming. It is
// the stage's data, the same for every team, and it needs a key like
// every route.
func TestModelsListsWhatTheStageOffers(t *testing.T) {
	rt, _ := newRouter(t)
	st, body := call(rt, demo.TeamID, "GET", "GET /v1/models", "/v1/models", nil, nil)
	require.Equal(t, 200, st, body)
	var got []map[string]any
	for _, it := range body["items"].([]any) {
		got = append(got, it.(map[string]any))
	}
	require.Len(t, got, 5)
	var ids, tiers []any
	for _, o := range got {
		ids, tiers = append(ids, o["model_id"]), append(tiers, o["tier"])
		assert.Equal(t, "bedrock", o["provider"])
		assert.Equal(t, true, o["streaming"])
	}
	assert.Equal(t, []any{"amazon.nova-micro-v1:0", "anthropic.claude-3-5-haiku-20241022-v1:0", "anthropic.claude-3-5-sonnet-20240620-v1:0",
		"amazon.nova-pro-v1:0", "example.unpriced-v1:0"}, ids)
	assert.Equal(t, []any{"tier_0", "tier_1", "tier_2", nil, nil}, tiers)
	// Prices per 1,000 tokens, from the per-million table.
	assert.InDelta(t, 0.003, got[2]["input_usd_per_1k_tokens"], 1e-12)
	assert.InDelta(t, 0.015, got[2]["output_usd_per_1k_tokens"], 1e-12)
	assert.Contains(t, got[4], "input_usd_per_1k_tokens")
	assert.Nil(t, got[4]["input_usd_per_1k_tokens"], "unpriced")
	assert.Nil(t, got[4]["output_usd_per_1k_tokens"], "unpriced")

	// Another team sees the same stage.
	st, other := call(rt, demo.OtherTeamID, "GET", "GET /v1/models", "/v1/models", nil, nil)
	require.Equal(t, 200, st)
	assert.Equal(t, body, other)
	// No key, no models.
	st, _ = call(rt, "", "GET", "GET /v1/models", "/v1/models", nil, nil)
	assert.Equal(t, 401, st)
}

// errorField is the field a 400's error names.
func errorField(t *testing.T, body map[string]any) string {
	t.Helper()
	e, ok := body["error"].(map[string]any)
	require.True(t, ok, "an error body: %v", body)
	f, _ := e["field"].(string)
	return f
}

// Over HTTP: POST and PATCH /v1/agents with a model the stage does not
// offer are 400 naming model.id with nothing written; ?misconfigured=true
// lists the agents whose model it no longer offers; a misconfigured value
// other than true or false is 400 naming misconfigured.
func TestAgentsRoutesHoldModelsToTheStage(t *testing.T) {
	rt, store := newRouter(t)
	agent := func(slug, id string) map[string]any {
		return map[string]any{"slug": slug, "name": slug, "model": map[string]any{"provider": "bedrock", "id": id},
			"skills": []map[string]any{{"name": "testing", "description": "tests"}}}
	}
	st, res := call(rt, demo.TeamID, "POST", "POST /v1/agents", "/v1/agents", nil, agent("nova", "amazon.nova-pro-v1:0"))
	require.Equal(t, 201, st, res)
	st, res = call(rt, demo.TeamID, "POST", "POST /v1/agents", "/v1/agents", nil, agent("opus", "anthropic.claude-3-opus-20240229-v1:0"))
	require.Equal(t, 400, st, res)
	assert.Equal(t, "model.id", errorField(t, res))
	_, err := store.GetAgent(context.Background(), demo.TeamID, "opus")
	assert.Error(t, err, "nothing stored")

	st, res = call(rt, demo.TeamID, "PATCH", "PATCH /v1/agents/{slug}", "/v1/agents/nova", nil,
		map[string]any{"model": map[string]any{"id": "anthropic.claude-3-opus-20240229-v1:0"}})
	require.Equal(t, 400, st, res)
	assert.Equal(t, "model.id", errorField(t, res))

	// GIVEN an agent stored when the stage offered its model
	_, err = agents.NewService(store).Create(context.Background(), demo.TeamID, agents.CreateInput{Slug: "legacy", Name: "Legacy",
		Model: &agents.Model{Provider: "bedrock", ID: "anthropic.claude-3-opus-20240229-v1:0"}})
	require.NoError(t, err)
	// WHEN the misconfigured agents are listed THEN it alone is
	st, res = call(rt, demo.TeamID, "GET", "GET /v1/agents", "/v1/agents", map[string]string{"misconfigured": "true"}, nil)
	require.Equal(t, 200, st, res)
	items := res["items"].([]any)
	require.Len(t, items, 1, res)
	assert.Equal(t, "legacy", items[0].(map[string]any)["slug"])
	// AND every agent is listed without the filter
	st, all := call(rt, demo.TeamID, "GET", "GET /v1/agents", "/v1/agents", map[string]string{"misconfigured": "false"}, nil)
	require.Equal(t, 200, st, all)
	assert.Greater(t, len(all["items"].([]any)), 1)

	st, res = call(rt, demo.TeamID, "GET", "GET /v1/agents", "/v1/agents", map[string]string{"misconfigured": "yes"}, nil)
	require.Equal(t, 400, st, res)
	assert.Equal(t, "misconfigured", errorField(t, res))
}
