//go:build integration

package cloud_test

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/localstack/cloud"
)

// awaitTask long-polls a task until it ends and returns it.
func (d demoTeam) awaitTask(id string) map[string]any {
	d.t.Helper()
	for range 4 {
		st, tk := d.call("GET", "/v1/tasks/"+id+"?wait=25", nil)
		require.Equal(d.t, 200, st, tk)
		switch tk["status"] {
		case "completed", "failed", "canceled", "timed_out":
			return tk
		}
	}
	d.t.Fatalf("task %s did not end", id)
	return nil
}

// Two steps of the same agent through the API (executed tasks, as a
// plan's steps are): the one created with the bridging pack is offered
// its tools (the local model lists what it was given: [list-tools]); the
// next, without it, is not. A pack asked for mid-task (request_tool_pack,
// [request-pack:NAME]) is the task's from its next step, on its timeline,
// and not the next task's. An unknown pack is a 400 naming tool_packs.
func TestAStepAugmentedWithAPackSeesItsToolsAndTheNextDoesNot(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	st, res := d.call("POST", "/v1/agents", map[string]any{"slug": "stepper", "name": "Stepper",
		"skills": []any{map[string]any{"name": "steps", "description": "works on plan steps"}}})
	require.Equal(t, 201, st, res)
	run := func(body map[string]any) map[string]any {
		t.Helper()
		body["assignee"], body["execute"] = "stepper", true
		st, tk := d.call("POST", "/v1/tasks", body)
		require.Equal(t, 201, st, tk)
		assert.Equal(t, body["tool_packs"], tk["tool_packs"])
		done := d.awaitTask(tk["id"].(string))
		require.Equal(t, "completed", done["status"], done)
		return done
	}

	step1 := run(map[string]any{"title": "step 1", "instructions": "[list-tools] gather the findings", "tool_packs": []any{"bridging", "memory"}})
	assert.Equal(t, []any{"bridging", "memory"}, step1["tool_packs"], "kept on the task item")
	for _, tool := range []string{"summarize_text", "extract_structured_data", "compare_texts", "clipboard_store", "clipboard_get", "search_memories", "share_memory", "request_tool_pack"} {
		assert.Contains(t, step1["result"], tool, "step 1 was given %s", tool)
	}
	step2 := run(map[string]any{"title": "step 2", "instructions": "[list-tools] write the notes"})
	assert.Contains(t, step2["result"], "request_tool_pack")
	for _, tool := range []string{"summarize_text", "clipboard_store", "search_memories"} {
		assert.NotContains(t, step2["result"], tool, "step 2 was not given %s", tool)
	}
	assert.NotContains(t, step2, "tool_packs")

	// The memory pack: tools the agent's skills do not declare.
	asked := run(map[string]any{"title": "step 3", "instructions": "[request-pack:memory] check what we know"})
	assert.Contains(t, asked["result"], "search_memories")
	assert.Equal(t, float64(1), asked["tool_calls"], "the request is one tool call")
	var added map[string]any
	for _, ev := range asked["events"].([]any) {
		if m := ev.(map[string]any); m["type"] == "tool_pack_added" {
			added = m["payload"].(map[string]any)
		}
	}
	require.NotNil(t, added, "on the timeline: %v", asked["events"])
	assert.Equal(t, "memory", added["pack"])
	assert.Equal(t, []any{"search_memories", "share_memory"}, added["tools"])
	after := run(map[string]any{"title": "step 4", "instructions": "[list-tools] next"})
	assert.NotContains(t, after["result"], "search_memories", "the next task does not get it")

	for _, bad := range []any{[]any{"capture"}, []any{"memory", "memory"}, "memory"} {
		st, res := d.call("POST", "/v1/tasks", map[string]any{"assignee": "stepper", "title": "bad", "tool_packs": bad})
		require.Equal(t, 400, st, res)
		if _, isList := bad.([]any); isList {
			assert.Equal(t, "tool_packs", res["error"].(map[string]any)["field"], res)
		}
	}
}

// GET /v1/tool-packs and /v1/tool-packs/{name} over HTTP: every pack with
// its tools' complete schemas, the same for every team without MCP packs
// of its own, 404 for an unknown name, 401 without a key; a built-in
// pack costs no AWS call.
func TestToolPackRoutesOnTheLocalCloud(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	other := mustDemoTeam(t, e)
	st, list := d.call("GET", "/v1/tool-packs", nil)
	require.Equal(t, 200, st, list)
	packs := list["tool_packs"].([]any)
	var names []string
	for _, x := range packs {
		p := x.(map[string]any)
		names = append(names, p["name"].(string))
		require.NotEmpty(t, p["tools"], p["name"])
		for _, y := range p["tools"].([]any) {
			tool := y.(map[string]any)
			raw, err := json.Marshal(tool["input_schema"])
			require.NoError(t, err)
			var s jsonschema.Schema
			require.NoError(t, json.Unmarshal(raw, &s), tool["name"])
			_, err = s.Resolve(nil)
			require.NoError(t, err, "%s: a valid JSON Schema", tool["name"])
			assert.Equal(t, "object", s.Type)
			assert.NotEmpty(t, tool["description"])
			assert.NotEmpty(t, tool["flag"])
		}
	}
	assert.Equal(t, []string{"collaboration", "memory", "board", "reporting", "bridging"}, names)
	st, otherList := other.call("GET", "/v1/tool-packs", nil)
	require.Equal(t, 200, st)
	assert.Equal(t, list, otherList, "built in: every team sees the same packs")

	st, one := d.call("GET", "/v1/tool-packs/bridging", nil)
	require.Equal(t, 200, st, one)
	assert.Equal(t, "bridging", one["name"])
	assert.Len(t, one["tools"], 5)
	for _, bad := range []string{"capture", "BRIDGING", "bridging%20", "a%2Fb"} {
		st, res := d.call("GET", "/v1/tool-packs/"+bad, nil)
		assert.Equal(t, 404, st, "%s: %v", bad, res)
	}

	base := os.Getenv("CONCLAVE_BASE_URL")
	for _, path := range []string{"/v1/tool-packs", "/v1/tool-packs/bridging"} {
		resp := apitest.Client{Base: base, Key: "", T: t}.Do("GET", path, nil)
		assert.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, resp.Status, path)
		resp = apitest.Client{Base: base, Key: "ck_not_a_key", T: t}.Do("GET", path, nil)
		assert.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, resp.Status, path)
	}

	api := apitest.Client{Base: base, Key: d.key, T: t}
	for path, want := range map[string]map[string]int{
		// The team's MCP packs: one query of its packs.
		"/v1/tool-packs": {"DynamoDB.Query": 1},
		// A built-in pack: in memory.
		"/v1/tool-packs/bridging": {},
		// Any other name may be one of the team's MCP packs: one read.
		"/v1/tool-packs/capture": {"DynamoDB.GetItem": 1},
	} {
		resp := api.Do("GET", path, nil)
		got := map[string]int{}
		require.NoError(t, json.Unmarshal([]byte(resp.Header.Get(cloud.AWSCallsHeader)), &got), path)
		assert.Equal(t, want, got, path)
	}
}
