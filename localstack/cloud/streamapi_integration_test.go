//go:build integration

package cloud_test

// The streaming API through the local edge (a REST API whose integrations
// stream), read with an ordinary SSE client: httpx-sse's parser, in the
// test tools' venv (localstack/sseclient/client.py), not the project's.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sseEvent is one event as the SSE client saw it.
type sseEvent struct {
	At    float64 `json:"at"`
	ID    string  `json:"id"`
	Event string  `json:"event"`
	Data  string  `json:"data"`
}

func (e sseEvent) json(t *testing.T) map[string]any {
	t.Helper()
	out := map[string]any{}
	require.NoError(t, json.Unmarshal([]byte(e.Data), &out), e.Data)
	return out
}

// sseEnd is the client's last line: the response and how it ended.
type sseEnd struct {
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	Body        string `json:"body"`
	Events      int    `json:"events"`
	ClosedBy    string `json:"closed_by"`
}

// sse reads one stream of the streaming API with the SSE client; args are
// the client's (--method, --body, --header, --max-events).
func (d demoTeam) sse(key, path string, args ...string) ([]sseEvent, sseEnd) {
	d.t.Helper()
	base := os.Getenv("CONCLAVE_STREAM_URL")
	require.NotEmpty(d.t, base, "CONCLAVE_STREAM_URL is not set: run make test")
	root, python, err := toolsPython()
	require.NoError(d.t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, append([]string{filepath.Join(root, "localstack", "sseclient", "client.py"),
		"--url", base + path, "--key", key}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	require.NoError(d.t, err, "the SSE client (the test tools' venv): %s", stderr.String())
	var evs []sseEvent
	var end sseEnd
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.Contains(line, []byte(`"closed_by"`)) {
			require.NoError(d.t, json.Unmarshal(line, &end))
			continue
		}
		var ev sseEvent
		require.NoError(d.t, json.Unmarshal(line, &ev), string(line))
		evs = append(evs, ev)
	}
	return evs, end
}

func body(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

func eventNames(evs []sseEvent) []string {
	names := []string{}
	for _, ev := range evs {
		names = append(names, ev.Event)
	}
	return names
}

// A streamed turn: routing first, deltas that concatenate to each stored
// reply, the replies as stored, and done with the stored turn; the pieces
// arrive over time, at the model's pace.
func TestAStreamedTurnStreamsWhatItStores(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("")
	evs, end := d.sse(d.key, "/v1/conversations/"+conv+"/messages", "--method", "POST",
		"--body", body(map[string]any{"content": "Please review the Go handler in pkg/api for race conditions and suggest fixes."}))
	require.Equal(t, 200, end.Status)
	require.Contains(t, end.ContentType, "text/event-stream")
	require.NotEmpty(t, evs)
	names := eventNames(evs)
	assert.Equal(t, "routing", names[0], "the decision comes first")
	assert.Equal(t, "done", names[len(names)-1], "the stored turn comes last")

	deltas := map[string]*strings.Builder{}
	var replies []map[string]any
	firstDelta, lastDelta := -1.0, 0.0
	for _, ev := range evs {
		switch ev.Event {
		case "delta":
			dl := ev.json(t)
			id := dl["message_id"].(string)
			if deltas[id] == nil {
				deltas[id] = &strings.Builder{}
			}
			deltas[id].WriteString(dl["text"].(string))
			if firstDelta < 0 {
				firstDelta = ev.At
			}
			lastDelta = ev.At
		case "reply":
			replies = append(replies, ev.json(t))
		}
	}
	require.NotEmpty(t, replies)
	done := evs[len(evs)-1].json(t)
	stored := d.messages(conv)
	require.Len(t, stored, 1+len(replies), "the user's message and the replies are stored")
	assert.Equal(t, done["user_message"].(map[string]any)["id"], stored[0]["id"])
	for i, r := range replies {
		s := stored[i+1]
		assert.Equal(t, s["id"], r["id"])
		assert.Equal(t, s["content"], r["content"], "a reply event is the stored reply")
		require.NotNil(t, deltas[r["id"].(string)], "the reply %s was streamed", r["id"])
		assert.Equal(t, s["content"], deltas[r["id"].(string)].String(), "the deltas concatenate to the stored reply")
	}
	assert.Greater(t, lastDelta-firstDelta, 0.05, "the model's pieces arrive over time, not at once")
}

// A client that goes away after the first events loses nothing: the turn
// is committed as if it had read to the end.
func TestADisconnectedClientsTurnStillCommits(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("")
	evs, end := d.sse(d.key, "/v1/conversations/"+conv+"/messages", "--method", "POST", "--max-events", "2",
		"--body", body(map[string]any{"content": "Summarize the release plan for Friday in a few sentences, please."}))
	require.Equal(t, "client", end.ClosedBy)
	require.Len(t, evs, 2)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if msgs := d.messages(conv); len(msgs) >= 2 {
			assert.Equal(t, "user", msgs[0]["role"])
			assert.Equal(t, "Summarize the release plan for Friday in a few sentences, please.", msgs[0]["content"])
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatal("the turn of a client that went away was not stored")
}

// Refused before the stream starts: the usual JSON error, nothing stored;
// another team's conversation is 404, a missing key 401, a bad one 403.
func TestAStreamedTurnRefusedBeforeItStartsIsAJSONError(t *testing.T) {
	e := mustEnv(t)
	d, other := mustDemoTeam(t, e), mustDemoTeam(t, e)
	conv := d.conversation("")
	path := "/v1/conversations/" + conv + "/messages"
	cases := []struct {
		name, key, body string
		status          int
		code            string
	}{
		{"empty content", d.key, body(map[string]any{"content": ""}), 400, "invalid_request"},
		{"unknown field", d.key, body(map[string]any{"content": "hi", "nope": 1}), 400, "invalid_request"},
		{"another team's conversation", other.key, body(map[string]any{"content": "hi"}), 404, "not_found"},
	}
	for _, c := range cases {
		_, end := d.sse(c.key, path, "--method", "POST", "--body", c.body)
		assert.Equal(t, c.status, end.Status, c.name)
		assert.Contains(t, end.ContentType, "application/json", c.name)
		var eb struct{ Error struct{ Code string } }
		require.NoError(t, json.Unmarshal([]byte(end.Body), &eb), end.Body)
		assert.Equal(t, c.code, eb.Error.Code, c.name)
	}
	_, end := d.sse("", path, "--method", "POST", "--body", body(map[string]any{"content": "hi"}))
	assert.Equal(t, 401, end.Status, "no key")
	_, end = d.sse("ck_not_a_key", path, "--method", "POST", "--body", body(map[string]any{"content": "hi"}))
	assert.Equal(t, 403, end.Status, "a bad key")
	assert.Empty(t, d.messages(conv), "nothing refused was stored")
	_, end = other.sse(other.key, "/v1/conversations/"+conv+"/events")
	assert.Equal(t, 404, end.Status, "another team's conversation stream")
}

// A streamed message sent again with its Idempotency-Key answers only done,
// with the stored turn.
func TestAReplayedStreamedTurnAnswersOnlyDone(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("")
	args := []string{"--method", "POST", "--header", "Idempotency-Key: stream-replay-1",
		"--body", body(map[string]any{"content": "What is on the roadmap for the next sprint?"})}
	first, _ := d.sse(d.key, "/v1/conversations/"+conv+"/messages", args...)
	again, end := d.sse(d.key, "/v1/conversations/"+conv+"/messages", args...)
	require.Equal(t, 200, end.Status)
	require.Equal(t, []string{"done"}, eventNames(again), "a replayed turn answers only done")
	turn := first[len(first)-1].json(t)
	assert.Equal(t, turn["user_message"], again[0].json(t)["user_message"])
	assert.Len(t, d.messages(conv), len(turn["replies"].([]any))+1, "stored once")
}

// A session's stream shows every stage and the end, numbered without a
// gap; a client that disconnects after n events and resumes with
// Last-Event-ID receives exactly the rest; another team's is 404.
func TestASessionsStreamShowsEveryStageAndResumesWithoutGaps(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	id := d.start(map[string]any{"pattern": "pipeline", "participants": []any{part("luke", "worker", 1), part("archie", "worker", 2), part("sage", "worker", 3)}})
	all, end := d.sse(d.key, "/v1/sessions/"+id+"/events")
	require.Equal(t, 200, end.Status)
	require.Equal(t, "server", end.ClosedBy, "the stream closes when the run ends")
	stages := 0
	for i, ev := range all {
		assert.Equal(t, strconv.Itoa(i+1), ev.ID, "numbered from 1 without a gap")
		if ev.Event == "SessionStageCompleted" {
			stages++
		}
	}
	assert.GreaterOrEqual(t, stages, 3, "every stage: %v", eventNames(all))
	last := all[len(all)-1]
	require.Equal(t, "SessionStatusChanged", last.Event)
	assert.Equal(t, "completed", last.json(t)["status"], "the end")

	const n = 3
	head, end := d.sse(d.key, "/v1/sessions/"+id+"/events", "--max-events", strconv.Itoa(n))
	require.Equal(t, "client", end.ClosedBy)
	require.Len(t, head, n)
	rest, _ := d.sse(d.key, "/v1/sessions/"+id+"/events", "--header", "Last-Event-ID: "+head[n-1].ID)
	got := append(head, rest...)
	require.Len(t, got, len(all), "exactly the rest")
	for i := range all {
		assert.Equal(t, all[i].ID, got[i].ID)
		assert.Equal(t, all[i].Data, got[i].Data)
	}
	_, end = d.sse(d.key, "/v1/sessions/"+id+"/events", "--header", "Last-Event-ID: "+last.ID)
	assert.Equal(t, 204, end.Status, "an ended run whose events the client has: no content, no reconnect")
	_, end = d.sse(d.key, "/v1/sessions/"+id+"/events", "--header", "Last-Event-ID: x")
	assert.Equal(t, 400, end.Status)
	other := mustDemoTeam(t, e)
	_, end = other.sse(other.key, "/v1/sessions/"+id+"/events")
	assert.Equal(t, 404, end.Status, "another team's session")
}

// A conversation's stream starts at its present end and shows each message
// as it is stored.
func TestAConversationsStreamShowsNewMessages(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("")
	st, _ := d.call("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": "Before the stream opens."})
	require.Equal(t, 201, st)
	// Messages keep coming while the client connects (a loaded machine
	// starts it in seconds): it sees those stored after it opened.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(1500 * time.Millisecond):
				d.call("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": "While the stream is open."})
			}
		}
	}()
	evs, _ := d.sse(d.key, "/v1/conversations/"+conv+"/events", "--max-events", "2")
	require.Len(t, evs, 2)
	assert.Equal(t, "MessagePosted", evs[0].Event)
	assert.Equal(t, "While the stream is open.", evs[0].json(t)["message"].(map[string]any)["content"], "from now: not the earlier turn")
	n, _ := strconv.Atoi(evs[0].ID)
	assert.Equal(t, strconv.Itoa(n+1), evs[1].ID)
}
