//go:build integration

// A team's A2A agent on the streaming API (docs/a2a.md, "Streaming"): the
// card says streaming: true and lists the streaming endpoint first, and
// the official Python client's streaming calls (a2a-sdk's send_message
// with streaming on, and subscribe) go there and read the task's events as
// it runs; an ordinary SSE client sees each event as a JSON-RPC response
// in a data line; the key is checked as on the HTTP API.
package cloud_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// a2aStreamURL is the agent at url on the streaming API.
func a2aStreamURL(t *testing.T, url string) string {
	t.Helper()
	base := os.Getenv("CONCLAVE_STREAM_URL")
	require.NotEmpty(t, base, "CONCLAVE_STREAM_URL is not set: run make test")
	return base + url[strings.Index(url, "/a2a/"):]
}

// streamedEvent is one event as the Python client saw it.
type streamedEvent struct {
	Kind  string
	Task  string
	State string
	Text  []string
}

func TestTheOfficialPythonClientStreamsATask(t *testing.T) {
	e := mustEnv(t)
	d, url := a2aTeam(t, e)
	stream := a2aStreamURL(t, url)
	root, python, err := toolsPython()
	require.NoError(t, err)
	scenario, _ := json.Marshal(map[string]string{
		"ask":  "Review this handler for bugs, please.",
		"slow": "@sloane dig out the 2019 release notes",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, filepath.Join(root, "localstack", "a2aclient", "client.py"),
		"--url", url, "--key", d.key, "--scenario", string(scenario), "--stream")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	require.NoError(t, err, "the a2a-sdk client (the test tools' venv, localstack/contract.sh venv): %s", stderr.String())
	t.Logf("what the a2a-sdk client saw: %s", raw)
	var got struct {
		Card struct {
			Streaming  bool
			Interfaces [][]string
		}
		Streamed       []streamedEvent
		SubscribeEnded map[string]any `json:"subscribe_ended"`
		Slow           streamedEvent
		Subscribed     []streamedEvent
		Posted         []string
	}
	require.NoError(t, json.Unmarshal(raw, &got), string(raw))

	// The card offers streaming, at the streaming endpoint first.
	assert.True(t, got.Card.Streaming)
	assert.Equal(t, [][]string{{stream, "JSONRPC", "1.0"}, {url, "JSONRPC", "1.0"}, {stream, "JSONRPC", "0.3"}, {url, "JSONRPC", "0.3"}},
		got.Card.Interfaces)
	// Every call of the streaming client went to the streaming API.
	require.NotEmpty(t, got.Posted)
	for _, u := range got.Posted {
		assert.Equal(t, stream, u)
	}

	// The streamed message: the task first, status updates while it ran,
	// the answer as an artifact, and the completed status last.
	ev := got.Streamed
	require.GreaterOrEqual(t, len(ev), 3, "the task, the answer and the final status at least")
	assert.Equal(t, "task", ev[0].Kind)
	assert.Contains(t, []string{"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}, ev[0].State)
	final := ev[len(ev)-1]
	assert.Equal(t, "status_update", final.Kind)
	assert.Equal(t, "TASK_STATE_COMPLETED", final.State, "the stream ends with the completed task")
	answer := ev[len(ev)-2]
	require.Equal(t, "artifact_update", answer.Kind, "the answer comes before the final status")
	require.NotEmpty(t, answer.Text)
	updates := 0
	for _, e := range ev[1 : len(ev)-2] {
		assert.Equal(t, "status_update", e.Kind)
		assert.Equal(t, ev[0].Task, e.Task)
		updates++
	}
	assert.GreaterOrEqual(t, updates, 1, "a status update arrived before the final one: %v", ev)
	svc, _ := taskService(t, e)
	stored, err := svc.Get(context.Background(), d.id, ev[0].Task)
	require.NoError(t, err)
	assert.Equal(t, tasks.Completed, stored.Status)
	assert.Equal(t, stored.Result, answer.Text[0], "the artifact is the task's result")

	// An ended task has nothing more to stream.
	require.NotNil(t, got.SubscribeEnded)
	assert.Contains(t, got.SubscribeEnded["type"], "UnsupportedOperation", got.SubscribeEnded)

	// A subscription to a running task: the task, then its changes until
	// the cancel ended it.
	require.NotEmpty(t, got.Subscribed)
	assert.Equal(t, "task", got.Subscribed[0].Kind)
	assert.Equal(t, got.Slow.Task, got.Subscribed[0].Task)
	last := got.Subscribed[len(got.Subscribed)-1]
	assert.Equal(t, "status_update", last.Kind)
	assert.Equal(t, "TASK_STATE_CANCELED", last.State)
}

// An ordinary SSE client of the streaming endpoint: each event a JSON-RPC
// response in a data line, as it happens; failures before the stream are
// JSON-RPC errors with their statuses, as on the HTTP API.
func TestTheA2AStreamIsServerSentEvents(t *testing.T) {
	e := mustEnv(t)
	d, url := a2aTeam(t, e)
	other := mustDemoTeam(t, e)
	path := url[strings.Index(url, "/a2a/"):]
	send := body(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "SendStreamingMessage", "params": map[string]any{
		"message": map[string]any{"messageId": "m1", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "Review this handler for bugs, please."}}}}})
	evs, end := d.sse(d.key, path, "--method", "POST", "--body", send, "--header", "A2A-Version: 1.0")
	require.Equal(t, 200, end.Status, end.Body)
	assert.Contains(t, end.ContentType, "text/event-stream")
	assert.Equal(t, "server", end.ClosedBy, "the stream ends with the task")
	require.GreaterOrEqual(t, len(evs), 3)
	var kinds []string
	for _, ev := range evs {
		resp := ev.json(t)
		assert.Equal(t, float64(7), resp["id"])
		result := resp["result"].(map[string]any)
		for kind := range result {
			kinds = append(kinds, kind)
		}
	}
	assert.Equal(t, "task", kinds[0])
	assert.Equal(t, []string{"artifactUpdate", "statusUpdate"}, kinds[len(kinds)-2:])
	final := evs[len(evs)-1].json(t)["result"].(map[string]any)["statusUpdate"].(map[string]any)
	assert.Equal(t, "TASK_STATE_COMPLETED", final["status"].(map[string]any)["state"])
	assert.Less(t, evs[0].At, evs[len(evs)-1].At, "the task came first, the answer when it was ready")

	// No key, another team's key: JSON-RPC errors, before any stream.
	for key, want := range map[string]int{"": 401, "ck_nope": 401, other.key: 404} {
		_, end := d.sse(key, path, "--method", "POST", "--body", send, "--header", "A2A-Version: 1.0")
		assert.Equal(t, want, end.Status)
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(end.Body), &out), end.Body)
		assert.Equal(t, "2.0", out["jsonrpc"])
		assert.Contains(t, out, "error")
	}
	// Non-streaming methods answer there too, as one JSON body.
	st, out := rpc(t, a2aStreamURL(t, url), d.key, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`, "A2A-Version", "1.0")
	require.Equal(t, http.StatusOK, st, out)
	assert.Contains(t, out, "result")
}
