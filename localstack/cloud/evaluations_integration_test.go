//go:build integration

package cloud_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
)

// A routing evaluation end to end (issue 42): POST /v1/routing/evaluations
// answers 202 (replayed by its Idempotency-Key), the event reaches the
// routing-evaluator through its rule and queue, each message is scored by
// the expert-gate function, and GET answers the result; bad input is 400
// naming the field with nothing created; another team sees none of it.
// gardenTeam gives c's team three agents through the API: a generalist
// (the default), a gardener and a mechanic, each specialist's skill with
// a few examples.
func gardenTeam(t *testing.T, c apitest.Client) {
	t.Helper()
	for _, a := range []map[string]any{
		{"slug": "host", "name": "Host", "skills": []any{map[string]any{"name": "small-talk", "description": "Greetings and general questions"}}},
		{"slug": "gardener", "name": "Gardener", "skills": []any{map[string]any{"name": "plant-care", "description": "Looks after plants and gardens",
			"examples": []string{"my tomato leaves are yellow", "how often should I water basil?", "what fertilizer do roses need?"}}}},
		{"slug": "mechanic", "name": "Mechanic", "skills": []any{map[string]any{"name": "car-repair", "description": "Fixes cars and engines",
			"examples": []string{"my car makes a grinding noise when braking", "the engine light is on", "how often should I change the oil?"}}}},
	} {
		r := c.Do("POST", "/v1/agents", a)
		require.Equal(t, 201, r.Status, string(r.Body))
	}
	require.Equal(t, 200, c.Do("PUT", "/v1/team/default-agent", map[string]any{"slug": "host"}).Status)
}

func TestARoutingEvaluationRunsInTheBackground(t *testing.T) {
	e := mustEnv(t)
	api, other := apiTeam(t, e, "evaluations"), apiTeam(t, e, "evaluations")
	gardenTeam(t, api)
	count := func(c apitest.Client) int {
		r := c.Do("GET", "/v1/routing/evaluations", nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		return len(r.JSON(t)["items"].([]any))
	}

	for field, body := range map[string]any{
		"messages":                   map[string]any{"messages": []any{}},
		"messages[0].content":        map[string]any{"messages": []any{map[string]any{"content": " ", "expected_agent": nil}}},
		"messages[0].expected_agent": map[string]any{"messages": []any{map[string]any{"content": "hi", "expected_agent": "Not A Slug"}}},
		"confidence_threshold":       map[string]any{"messages": []any{map[string]any{"content": "hi", "expected_agent": nil}}, "confidence_threshold": 1.5},
	} {
		r := api.Do("POST", "/v1/routing/evaluations", body)
		require.Equal(t, 400, r.Status, string(r.Body))
		_, got, _ := r.ErrorFields(t)
		assert.Equal(t, field, got)
	}
	tooMany := make([]any, 201)
	for i := range tooMany {
		tooMany[i] = map[string]any{"content": "hi", "expected_agent": nil}
	}
	assert.Equal(t, 400, api.Do("POST", "/v1/routing/evaluations", map[string]any{"messages": tooMany}).Status)
	big := map[string]any{"messages": []any{map[string]any{"content": strings.Repeat("x", 7000), "expected_agent": nil}}}
	for range 9 {
		big["messages"] = append(big["messages"].([]any), map[string]any{"content": strings.Repeat("y", 7000), "expected_agent": nil})
	}
	assert.Equal(t, 413, api.Do("POST", "/v1/routing/evaluations", big).Status, "over 64 KiB")
	assert.Zero(t, count(api), "nothing created")

	body := map[string]any{"confidence_threshold": 0.3, "messages": []any{
		map[string]any{"content": "the leaves on my cucumber plant are going brown", "expected_agent": "gardener", "expected_skill": "plant-care"},
		map[string]any{"content": "the engine light of my car is on again", "expected_agent": "mechanic"},
		map[string]any{"content": "what's the capital of Peru?", "expected_agent": nil},
	}}
	r := api.Do("POST", "/v1/routing/evaluations", body, "Idempotency-Key", "eval-1")
	require.Equal(t, 202, r.Status, string(r.Body))
	created := r.JSON(t)
	id := created["id"].(string)
	assert.Equal(t, "running", created["status"])
	assert.EqualValues(t, 3, created["message_count"])
	again := api.Do("POST", "/v1/routing/evaluations", body, "Idempotency-Key", "eval-1")
	require.Equal(t, 202, again.Status)
	assert.Equal(t, id, again.JSON(t)["id"], "replayed, not created twice")
	assert.Equal(t, 1, count(api))

	var done map[string]any
	require.Eventually(t, func() bool {
		g := api.Do("GET", "/v1/routing/evaluations/"+id, nil)
		require.Equal(t, 200, g.Status, string(g.Body))
		done = g.JSON(t)
		return done["status"] != "running"
	}, 60*time.Second, 300*time.Millisecond, "the routing-evaluator runs it")
	require.Equal(t, "completed", done["status"], done)
	res := done["result"].(map[string]any)
	assert.EqualValues(t, 2, res["in_scope"])
	assert.EqualValues(t, 1, res["out_of_scope"])
	assert.Equal(t, 1.0, res["agent_top1"], "both specialists ranked first: %v", res)
	assert.EqualValues(t, 0.3, res["at_given"].(map[string]any)["threshold"])
	assert.NotEmpty(t, res["confusion"])
	assert.Len(t, done["messages"], 3)

	assert.Equal(t, 404, other.Do("GET", "/v1/routing/evaluations/"+id, nil).Status)
	assert.Zero(t, count(other))
	assert.Equal(t, 404, api.Do("GET", "/v1/routing/evaluations/reval_00000000000000000000000000", nil).Status)
}
