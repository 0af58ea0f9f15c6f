package tasksapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/api/tasksapi"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// The task routes as the tasks function serves them (shared/wire/httpfn):
// the document's body rules and Idempotency-Key replays, over the
// in-memory store holding the demo team.
func newRouter(tb testing.TB) *httpapi.Router {
	tb.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	store := memstore.New()
	require.NoError(tb, demo.Seed(context.Background(), store))
	rt := httpapi.NewRouter(log).WithIdempotency(store)
	rt.Bodies = api.BodyRoutes()
	tasksapi.TaskRoutes(rt, tasks.NewService(store, nil, &memstore.Publisher{}, log))
	return rt
}

// call serves one request of the demo team as API Gateway sends it;
// headers are name, value pairs.
func call(rt *httpapi.Router, method, routeKey, path string, params map[string]string, body any, headers ...string) (int, map[string]any, events.APIGatewayV2HTTPResponse) {
	raw := ""
	if body != nil {
		b, _ := json.Marshal(body)
		raw = string(b)
	}
	h := map[string]string{}
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i]] = headers[i+1]
	}
	resp, _ := rt.Serve(context.Background(), events.APIGatewayV2HTTPRequest{
		RouteKey: routeKey, RawPath: path, Body: raw, PathParameters: params, Headers: h,
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "req-tier",
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"team_id": demo.TeamID, "key_id": "key_test"}}},
	})
	out := map[string]any{}
	_ = json.Unmarshal([]byte(resp.Body), &out)
	return resp.StatusCode, out, resp
}

func create(rt *httpapi.Router, body map[string]any, headers ...string) (int, map[string]any, events.APIGatewayV2HTTPResponse) {
	return call(rt, "POST", "POST /v1/tasks", "/v1/tasks", nil, body, headers...)
}

func get(t *testing.T, rt *httpapi.Router, id string) map[string]any {
	t.Helper()
	st, tk, _ := call(rt, "GET", "GET /v1/tasks/{id}", "/v1/tasks/"+id, map[string]string{"id": id}, nil)
	require.Equal(t, 200, st, tk)
	return tk
}

func count(t *testing.T, rt *httpapi.Router) int {
	t.Helper()
	st, list, _ := call(rt, "GET", "GET /v1/tasks", "/v1/tasks", nil, nil)
	require.Equal(t, 200, st, list)
	return len(list["items"].([]any))
}

func errorOf(t *testing.T, body map[string]any) (field, reason string) {
	t.Helper()
	e, ok := body["error"].(map[string]any)
	require.True(t, ok, "an error body: %v", body)
	field, _ = e["field"].(string)
	reason, _ = e["reason"].(string)
	return field, reason
}

// POST /v1/tasks and POST /v1/tasks/{id}/delegate take model_tier: each
// tier is stored as given, auto and none store the tier the task's
// complexity picks, and anything else (tier_3, one past the set) is 400
// naming model_tier with nothing written.
func TestModelTierOnCreateAndDelegate(t *testing.T) {
	rt := newRouter(t)
	for _, tier := range []string{"tier_0", "tier_1", "tier_2"} {
		st, tk, _ := create(rt, map[string]any{"assignee": "luke", "title": "Say hello to the team", "model_tier": tier})
		require.Equal(t, 201, st, tk)
		assert.Equal(t, tier, tk["model_tier"])
		assert.Equal(t, tier, get(t, rt, tk["id"].(string))["model_tier"], "stored")
	}
	hard := "Design the migration plan for the payments database: compare a blue-green cutover versus dual writes, analyze the tradeoffs, " +
		"evaluate the risk of data loss, and propose a rollback strategy. It must finish within 2 hours, under a budget of 500 dollars, " +
		"with at most 5% error rate and 200ms p99 latency. Which approach should we prioritize? Why?"
	for _, body := range []map[string]any{
		{"assignee": "luke", "title": "Migration", "instructions": hard, "model_tier": "auto"},
		{"assignee": "luke", "title": "Migration", "instructions": hard},
	} {
		st, tk, _ := create(rt, body)
		require.Equal(t, 201, st, tk)
		assert.Equal(t, "tier_2", tk["model_tier"], "auto: the complexity's tier, stored")
	}
	st, tk, _ := create(rt, map[string]any{"assignee": "luke", "title": "Say hello to the team", "model_tier": "auto"})
	require.Equal(t, 201, st, tk)
	assert.Equal(t, "tier_0", tk["model_tier"])

	n := count(t, rt)
	for _, bad := range []any{"tier_3", "TIER_1", "", 2, nil} {
		st, res, _ := create(rt, map[string]any{"assignee": "luke", "title": "bad tier", "model_tier": bad})
		if bad == "" {
			// Empty is the field left out (auto), as type's and
			// priority's; null is refused, as any null is.
			require.Equal(t, 201, st, res)
			assert.Equal(t, "tier_0", res["model_tier"])
			n++
			continue
		}
		require.Equal(t, 400, st, "%v: %v", bad, res)
		field, _ := errorOf(t, res)
		assert.Equal(t, "model_tier", field, "%v", bad)
	}
	assert.Equal(t, n, count(t, rt), "a refused create writes nothing")

	// A delegation from a running task of kyra's.
	st, parent, _ := create(rt, map[string]any{"assignee": "kyra", "title": "coordinate"})
	require.Equal(t, 201, st, parent)
	pid := parent["id"].(string)
	st, parent, _ = call(rt, "POST", "POST /v1/tasks/{id}/start", "/v1/tasks/"+pid+"/start", map[string]string{"id": pid}, nil)
	require.Equal(t, 200, st, parent)
	delegate := func(body map[string]any) (int, map[string]any) {
		st, res, _ := call(rt, "POST", "POST /v1/tasks/{id}/delegate", "/v1/tasks/"+pid+"/delegate", map[string]string{"id": pid}, body)
		return st, res
	}
	st, res := delegate(map[string]any{"assignee": "dana", "title": "look into it", "model_tier": "tier_3"})
	require.Equal(t, 400, st, res)
	field, _ := errorOf(t, res)
	assert.Equal(t, "model_tier", field)
	assert.Equal(t, parent["version"], get(t, rt, pid)["version"], "the parent is untouched")
	st, child := delegate(map[string]any{"assignee": "dana", "title": "look into it", "model_tier": "tier_2"})
	require.Equal(t, 201, st, child)
	assert.Equal(t, "tier_2", child["model_tier"])
	assert.Equal(t, pid, child["parent_task_id"])
	assert.Equal(t, "tier_2", get(t, rt, child["id"].(string))["model_tier"])
}

// A create repeated under its Idempotency-Key gets the first answer; the
// same key with another tier is a different request, refused as one with
// another title is (409 IdempotencyKeyReused), and creates nothing.
func TestAnIdempotentCreateWithAnotherTierIsAnotherRequest(t *testing.T) {
	rt := newRouter(t)
	body := map[string]any{"assignee": "luke", "title": "tiered", "model_tier": "tier_1"}
	st, first, resp := create(rt, body, "Idempotency-Key", "tier-once")
	require.Equal(t, 201, st, first)
	st, again, replay := create(rt, body, "Idempotency-Key", "tier-once")
	assert.Equal(t, 201, st)
	assert.Equal(t, resp.Body, replay.Body)
	assert.Equal(t, "true", replay.Headers["Idempotent-Replayed"])
	assert.Equal(t, first["id"], again["id"])

	for _, changed := range []map[string]any{
		{"assignee": "luke", "title": "tiered", "model_tier": "tier_2"},
		{"assignee": "luke", "title": "tiered", "model_tier": "auto"},
		{"assignee": "luke", "title": "tiered"},
		{"assignee": "luke", "title": "renamed", "model_tier": "tier_1"},
	} {
		st, res, _ := create(rt, changed, "Idempotency-Key", "tier-once")
		require.Equal(t, 409, st, "%v: %v", changed, res)
		_, reason := errorOf(t, res)
		assert.Equal(t, "IdempotencyKeyReused", reason)
	}
	assert.Equal(t, 1, count(t, rt), "one task")
	tk := get(t, rt, first["id"].(string))
	assert.Equal(t, "tier_1", tk["model_tier"], "the first tier stays")
}
