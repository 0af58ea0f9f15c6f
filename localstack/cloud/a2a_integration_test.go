//go:build integration

// A team as an A2A 1.0 agent on the local cloud (docs/a2a.md), checked
// with the official clients: a2a-sdk's Python client (the independent
// one, localstack/a2aclient/client.py, in the test tools' venv) resolves
// the card, sends messages that run as tasks through the delegation
// machine, reads, lists and cancels them and decides an approval; a2a-go's
// 0.3 layer answers a client that names no version; another team sees
// nothing; bad requests get JSON-RPC errors, never a 5xx.
package cloud_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// a2aTeam is a demo team with ava (whose model sends luke a message, which
// the team's policy holds for approval) and sloane (whose model never
// answers), and its agent's URLs from GET /v1/team.
func a2aTeam(t *testing.T, e env) (demoTeam, string) {
	t.Helper()
	d := approvalTeam(t, e, 600)
	_, err := agents.NewService(e.db.agents).Create(context.Background(), d.id, agents.CreateInput{
		Slug: "sloane", Name: "Sloane", Model: &agents.Model{Script: "timeout"},
		Skills: []agents.Skill{{Name: "archives", Description: "digs through the archives", Priority: 10, Public: true}},
	})
	require.NoError(t, err)
	st, team := d.call("GET", "/v1/team", nil)
	require.Equal(t, 200, st, team)
	a2a := team["a2a"].(map[string]any)
	url := a2a["url"].(string)
	assert.Regexp(t, `^http://[^/]+/a2a/a2a_[0-9a-f]{32}$`, url)
	assert.Equal(t, url+"/.well-known/agent-card.json", a2a["card_url"])
	assert.NotContains(t, url, d.id, "the A2A id is not the team id")
	st, again := d.call("GET", "/v1/team", nil)
	require.Equal(t, 200, st)
	assert.Equal(t, a2a, again["a2a"], "given once")
	return d, url
}

// rpc posts a JSON-RPC body to url with key and the headers.
func rpc(t *testing.T, url, key, body string, headers ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := map[string]any{}
	require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	return resp.StatusCode, out
}

func TestTheOfficialPythonClientWorksWithATeam(t *testing.T) {
	e := mustEnv(t)
	d, url := a2aTeam(t, e)
	root, python, err := toolsPython()
	require.NoError(t, err)
	scenario, _ := json.Marshal(map[string]string{
		"ask":      "Review this handler for bugs, please.",
		"slow":     "@sloane dig out the 2019 release notes",
		"approval": "@ava ask luke about the release",
		"missing":  "task_0000000000000000000000000",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, filepath.Join(root, "localstack", "a2aclient", "client.py"),
		"--url", url, "--key", d.key, "--scenario", string(scenario))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	require.NoError(t, err, "the a2a-sdk client (the test tools' venv, localstack/contract.sh venv): %s", stderr.String())
	var got struct {
		Card struct {
			Name       string
			Skills     []string
			Streaming  bool
			Interfaces [][]string
			Schemes    []string
		}
		ExtendedSkills []string `json:"extended_skills"`
		Sent           struct{ ID, Context, State string }
		Done           struct {
			State  string
			Answer []string
		}
		Listed   []string
		FollowUp struct{ ID, Context string } `json:"follow_up"`
		Canceled struct {
			First       string
			AfterCancel string `json:"after_cancel"`
		}
		CancelAgain map[string]string `json:"cancel_again"`
		Held        struct {
			State string
			Note  []string
		}
		Decided struct {
			State  string
			Answer []string
		}
		Missing map[string]string
	}
	t.Logf("what the a2a-sdk client saw: %s", raw)
	require.NoError(t, json.Unmarshal(raw, &got), string(raw))

	// The public card: the team, its key scheme and its public skills.
	assert.Equal(t, "routing", got.Card.Name)
	assert.Contains(t, got.Card.Skills, "sloane.archives", "a public skill")
	assert.Less(t, len(got.Card.Skills), len(got.ExtendedSkills), "the extended card shows every reachable skill")
	assert.Contains(t, got.ExtendedSkills, "ava.coordination")
	// Streaming, at the streaming API's endpoint first, which a client
	// takes for every call (a2a_stream_integration_test.go streams there).
	assert.True(t, got.Card.Streaming)
	stream := a2aStreamURL(t, url)
	assert.Equal(t, [][]string{{stream, "JSONRPC", "1.0"}, {url, "JSONRPC", "1.0"}, {stream, "JSONRPC", "0.3"}, {url, "JSONRPC", "0.3"}}, got.Card.Interfaces)
	assert.Equal(t, []string{"apiKey"}, got.Card.Schemes)

	// The message ran as a Conclave task of the routed agent, in a new
	// conversation, and its answer is the artifact.
	assert.True(t, strings.HasPrefix(got.Sent.ID, "task_"), got.Sent.ID)
	assert.True(t, strings.HasPrefix(got.Sent.Context, "conv_"), got.Sent.Context)
	assert.Equal(t, "TASK_STATE_COMPLETED", got.Done.State)
	require.NotEmpty(t, got.Done.Answer)
	svc, _ := taskService(t, e)
	stored, err := svc.Get(context.Background(), d.id, got.Sent.ID)
	require.NoError(t, err)
	assert.Equal(t, tasks.Completed, stored.Status)
	assert.Equal(t, got.Done.Answer[0], stored.Result, "the artifact is the task's result")
	assert.Equal(t, got.Sent.Context, stored.ConversationID)
	assert.Equal(t, "luke", stored.Assignee, "routed by meaning, as a chat turn: a code review goes to the reviewer")
	assert.Contains(t, got.Listed, got.Sent.ID)
	assert.Equal(t, got.Sent.Context, got.FollowUp.Context, "a follow-up stays in its context")
	assert.NotEqual(t, got.Sent.ID, got.FollowUp.ID)

	// Cancel: the slow task is canceled once, its execution stopped.
	assert.Contains(t, []string{"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}, got.Canceled.First)
	assert.Equal(t, "TASK_STATE_CANCELED", got.Canceled.AfterCancel)
	require.NotNil(t, got.CancelAgain, "an ended task is not cancelable")
	assert.Contains(t, got.CancelAgain["type"], "NotCancelable")

	// The approval surfaced as INPUT_REQUIRED and a data part decided it.
	assert.Equal(t, "TASK_STATE_INPUT_REQUIRED", got.Held.State)
	assert.Contains(t, strings.Join(got.Held.Note, " "), "decision")
	assert.Equal(t, "TASK_STATE_COMPLETED", got.Decided.State, "the rejection reached the model, which answered")
	require.NotEmpty(t, got.Decided.Answer)
	assert.Contains(t, got.Decided.Answer[0], "rejected by a human reviewer", "the model read the rejection as the tool's result")
	assert.Contains(t, got.Decided.Answer[0], "not now", "with the client's reason")

	require.NotNil(t, got.Missing)
	assert.Contains(t, got.Missing["type"], "TaskNotFound")
}

func TestA2AIsIsolatedValidatedAndSpeaksZeroThree(t *testing.T) {
	e := mustEnv(t)
	d, url := a2aTeam(t, e)
	other := mustDemoTeam(t, e)
	v1 := []string{"A2A-Version", "1.0"}

	// A task of the team, through A2A 1.0.
	st, out := rpc(t, url, d.key, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"@sloane find it"}]},"configuration":{"returnImmediately":true}}}`, v1...)
	require.Equal(t, 200, st, out)
	task := out["result"].(map[string]any)["task"].(map[string]any)
	id := task["id"].(string)

	// Another team's key: the agent is not found, its tasks invisible.
	st, out = rpc(t, url, other.key, `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"`+id+`"}}`, v1...)
	assert.Equal(t, 404, st, out)
	_, otherTeam := other.call("GET", "/v1/team", nil)
	otherURL := otherTeam["a2a"].(map[string]any)["url"].(string)
	st, out = rpc(t, otherURL, other.key, `{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"`+id+`"}}`, v1...)
	require.Equal(t, 200, st, out)
	assert.Equal(t, float64(-32001), out["error"].(map[string]any)["code"], "another team's task is not found")
	st, out = rpc(t, otherURL, other.key, `{"jsonrpc":"2.0","id":4,"method":"ListTasks","params":{}}`, v1...)
	require.Equal(t, 200, st, out)
	for _, tk := range out["result"].(map[string]any)["tasks"].([]any) {
		assert.NotEqual(t, id, tk.(map[string]any)["id"])
	}

	// No key, a bad body: JSON-RPC errors with their statuses, never a 5xx.
	st, out = rpc(t, url, "", `{"jsonrpc":"2.0","id":5,"method":"GetTask","params":{"id":"`+id+`"}}`, v1...)
	assert.Equal(t, 401, st)
	assert.Contains(t, out, "error")
	for _, body := range []string{`{`, `[]`, `{"jsonrpc":"2.0","id":6}`, `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","contextId":"conv_nope","parts":[{"text":"hi"}]}}}`} {
		st, out = rpc(t, url, d.key, body, v1...)
		assert.Less(t, st, 500, body)
		assert.Contains(t, out, "error", body)
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"x":"`+strings.Repeat("a", 300<<10)+`"}`))
	req.Header.Set("X-Api-Key", d.key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, 413, resp.StatusCode)
	assert.Contains(t, string(raw), `"jsonrpc":"2.0"`, "a JSON-RPC error object, not the gateway's")

	// No A2A-Version: a2a-go's 0.3 layer, with 0.3's method names.
	st, out = rpc(t, url, d.key, `{"jsonrpc":"2.0","id":9,"method":"tasks/get","params":{"id":"`+id+`"}}`)
	require.Equal(t, 200, st, out)
	got := out["result"].(map[string]any)
	assert.Equal(t, id, got["id"])
	assert.Contains(t, []string{"submitted", "working"}, got["status"].(map[string]any)["state"])
	st, out = rpc(t, url, d.key, `{"jsonrpc":"2.0","id":10,"method":"tasks/cancel","params":{"id":"`+id+`"}}`)
	require.Equal(t, 200, st, out)
	assert.Equal(t, "canceled", out["result"].(map[string]any)["status"].(map[string]any)["state"])

	// The public card needs no key; an unknown agent is a JSON-RPC 404.
	resp, err = http.Get(url + "/.well-known/agent-card.json")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	st, out = rpc(t, url[:strings.LastIndex(url, "/")]+"/a2a_00000000000000000000000000000000", d.key, `{"jsonrpc":"2.0","id":11,"method":"GetTask","params":{"id":"x"}}`, v1...)
	assert.Equal(t, 404, st)
	assert.Contains(t, out, "error")
}

// The A2A routes' AWS calls, as every route's are budgeted
// (budget_integration_test.go); the key check is the function's own here
// (the authorizer's two calls: the key by its hash, the team's request
// count), so it counts in the function's calls.
func TestA2ACallBudgets(t *testing.T) {
	e := mustEnv(t)
	d, url := a2aTeam(t, e)
	measure := func(method, path, body string, headers ...string) map[string]int {
		req, err := http.NewRequest(method, path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("X-Api-Key", d.key)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode, path)
		var got map[string]int
		require.NoError(t, json.Unmarshal([]byte(resp.Header.Get(cloud.AWSCallsHeader)), &got))
		t.Logf("%s %s: %v", method, path, got)
		return got
	}
	// The card: the team by its A2A id (gsi1), the team, its active agents.
	within(t, "the public card", measure("GET", url+"/.well-known/agent-card.json", ""), calls{"DynamoDB": 3})
	st, out := rpc(t, url, d.key, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"@sloane find it"}]},"configuration":{"returnImmediately":true}}}`, "A2A-Version", "1.0")
	require.Equal(t, 200, st, out)
	id := out["result"].(map[string]any)["task"].(map[string]any)["id"].(string)
	// GetTask: the team, the key, the request count, the task and its
	// events.
	within(t, "GetTask", measure("POST", url, `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"`+id+`"}}`, "A2A-Version", "1.0"),
		calls{"DynamoDB": 5})
}
