//go:build integration

package cloud_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/shared/routing/discovery"
	"github.com/conclave-ai/conclave/shared/routing/expertgate/gateclient"
)

// GET /v1/agents/{slug}/tools on the local cloud (the conversations
// function's own wiring): every tool the agent's model receives, with a
// schema the validator resolves; task tools on request; 400 naming
// context for any other context; 404 for an unknown agent and for
// another team's.
func TestAgentToolsRouteOnTheLocalCloud(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	other := mustDemoTeam(t, e)

	toolNames := func(res map[string]any) []string {
		var out []string
		for _, x := range res["tools"].([]any) {
			tool := x.(map[string]any)
			out = append(out, tool["name"].(string))
			raw, err := json.Marshal(tool["input_schema"])
			require.NoError(t, err)
			var s jsonschema.Schema
			require.NoError(t, json.Unmarshal(raw, &s), tool["name"])
			_, err = s.Resolve(nil)
			require.NoError(t, err, "%s: a valid JSON Schema", tool["name"])
			assert.Equal(t, "object", s.Type)
			for name, p := range s.Properties {
				assert.NotEmpty(t, p.Type, "%s.%s has a type", tool["name"], name)
				assert.NotEmpty(t, p.Description, "%s.%s has a description", tool["name"], name)
			}
		}
		return out
	}
	st, chat := d.call("GET", "/v1/agents/kyra/tools", nil)
	require.Equal(t, 200, st, chat)
	assert.Equal(t, "chat", chat["context"])
	names := toolNames(chat)
	for _, want := range []string{"delegate_task", "handoff_to", "consult_specialist", "close_consultation", "find_colleagues"} {
		assert.Contains(t, names, want)
	}
	st, task := d.call("GET", "/v1/agents/kyra/tools?context=task", nil)
	require.Equal(t, 200, st, task)
	assert.Equal(t, "task", task["context"])
	assert.NotContains(t, toolNames(task), "handoff_to")

	st, res := d.call("GET", "/v1/agents/kyra/tools?context=batch", nil)
	assert.Equal(t, 400, st, res)
	assert.Equal(t, "context", res["error"].(map[string]any)["field"], res)

	st, res = d.call("POST", "/v1/agents", map[string]any{"slug": "toolsmith", "name": "Toolsmith",
		"skills": []any{map[string]any{"name": "tooling", "description": "builds tools"}}})
	require.Equal(t, 201, st, res)
	st, _ = d.call("GET", "/v1/agents/toolsmith/tools", nil)
	assert.Equal(t, 200, st)
	st, res = other.call("GET", "/v1/agents/toolsmith/tools", nil)
	assert.Equal(t, 404, st, "another team's agent: %v", res)
	st, res = d.call("GET", "/v1/agents/nobody/tools", nil)
	assert.Equal(t, 404, st, res)

	// Its AWS calls (budget rows): the agent, one GetItem, whatever the
	// context; none for a refused context.
	api := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}
	for _, c := range []struct {
		path string
		want map[string]int
	}{
		{"/v1/agents/kyra/tools", map[string]int{"DynamoDB.GetItem": 1}},
		{"/v1/agents/kyra/tools?context=task", map[string]int{"DynamoDB.GetItem": 1}},
		{"/v1/agents/kyra/tools?context=batch", map[string]int{}},
		{"/v1/agents/nobody/tools", map[string]int{"DynamoDB.GetItem": 1}},
	} {
		resp := api.Do("GET", c.path, nil)
		got := map[string]int{}
		require.NoError(t, json.Unmarshal([]byte(resp.Header.Get(cloud.AWSCallsHeader)), &got), c.path)
		t.Logf("GET %s: %d %v", c.path, resp.Status, got)
		assert.Equal(t, c.want, got, c.path)
	}
}

// find_colleagues' service through the deployed gate (the expert-gate
// function, through the edge's Lambda Invoke): who fits, the asker left
// out, with availability and load.
func TestFindColleaguesThroughTheGateFunction(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	svc := &discovery.Service{Dir: e.db.gate, Gate: &gateclient.Client{Lambda: lambdaClient(e), FunctionName: e.names.Function("expert-gate")}}
	before := lastSeq(t)
	got, err := svc.FindColleagues(context.Background(), d.id, "kyra", "review this Go code for bugs", 3)
	require.NoError(t, err)
	gates, _ := invocations(t, before, "expert-gate", d.id)
	require.Len(t, gates, 1, "one gate invocation")
	t.Logf("find_colleagues: the gate's calls %v", gates[0].Calls)
	require.NotEmpty(t, got)
	assert.LessOrEqual(t, len(got), 3)
	for _, c := range got {
		assert.NotEqual(t, "kyra", c.Slug)
		assert.Equal(t, "active", c.Availability)
		assert.GreaterOrEqual(t, c.ActiveTasks, 0)
	}
	assert.Equal(t, "luke", got[0].Slug, "the code reviewer fits best")
}
