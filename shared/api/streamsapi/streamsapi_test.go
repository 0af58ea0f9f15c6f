package streamsapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/api/streamsapi"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
)

// turns is a chat service whose turn shows a watcher what a model would.
type turns struct {
	posted int
	post   func(in conversations.PostInput) (conversations.PostResult, error)
}

func (f *turns) Get(_ context.Context, teamID, id string) (conversations.Conversation, error) {
	if teamID != "team_a" || id != "conv_1" {
		return conversations.Conversation{}, apperr.NotFound("conversation", id)
	}
	return conversations.Conversation{ID: id}, nil
}

func (f *turns) Post(_ context.Context, _, _ string, in conversations.PostInput) (conversations.PostResult, error) {
	f.posted++
	return f.post(in)
}

func restRequest(method, resource, path, body string, headers map[string]string, params map[string]string) events.APIGatewayProxyRequest {
	h := map[string]string{"X-Api-Key": "ck"}
	for k, v := range headers {
		h[k] = v
	}
	return events.APIGatewayProxyRequest{HTTPMethod: method, Resource: resource, Path: path, Body: body, Headers: h, PathParameters: params,
		RequestContext: events.APIGatewayProxyRequestContext{RequestID: "req-1",
			Authorizer: map[string]any{"principalId": "team_a", "team_id": "team_a", "key_id": "key_1"}}}
}

type sseEvent struct{ id, event, data string }

// read parses the body (the test's own reading of the format SSE writes).
func read(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.event != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data += strings.TrimPrefix(line, "data: ")
		}
	}
	return out
}

func names(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.event)
	}
	return out
}

func turnRouter(f *turns) *httpapi.Router {
	rt := httpapi.NewStreamRouter(slog.New(slog.NewTextHandler(io.Discard, nil)))
	streamsapi.TurnRoute(rt, f, 20*time.Second)
	return rt
}

func postTurn(t *testing.T, f *turns, body string, headers map[string]string) (*events.APIGatewayProxyStreamingResponse, []sseEvent) {
	t.Helper()
	h := map[string]string{"Accept": "text/event-stream"}
	for k, v := range headers {
		h[k] = v
	}
	resp, err := turnRouter(f).ServeStream(context.Background(), restRequest("POST", "/v1/conversations/{id}/messages",
		"/v1/conversations/conv_1/messages", body, h, map[string]string{"id": "conv_1"}))
	require.NoError(t, err)
	return resp, read(t, resp.Body)
}

// A watched turn's events: routing first, the deltas as the watcher saw
// them, then per stored reply the rest of its text (what the turn added,
// or all of a message no model wrote) and the reply, and done last.
func TestAStreamedTurnsDeltasEndAsItsStoredReplies(t *testing.T) {
	f := &turns{post: func(in conversations.PostInput) (conversations.PostResult, error) {
		in.Watch.Routed(cascade.Decision{ID: "rdec_1"})
		in.Watch.Delta(conversations.Delta{MessageID: "msg_r", Agent: "kyra", Text: "Roll it out "})
		in.Watch.ToolCalled(conversations.ToolEvent{MessageID: "msg_r", Tool: "list_tasks"})
		in.Watch.ToolAnswered(conversations.ToolEvent{MessageID: "msg_r", Tool: "list_tasks", Output: "none"})
		in.Watch.Delta(conversations.Delta{MessageID: "msg_r", Agent: "kyra", Text: "in stages."})
		return conversations.PostResult{UserMessage: conversations.Message{ID: "msg_u"}, Replies: []conversations.Message{
			{ID: "msg_n", Role: conversations.AuthorSystem, Content: "No specialist matched."},
			{ID: "msg_r", Agent: "kyra", Content: "Roll it out in stages.\n\nStill running: task_1."},
		}}, nil
	}}
	resp, evs := postTurn(t, f, `{"content":"How do we roll it out?"}`, nil)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Headers["Content-Type"])
	assert.Equal(t, []string{"routing", "delta", "tool_call", "tool_result", "delta", "delta", "reply", "delta", "reply", "done"}, names(evs))
	texts := map[string]string{}
	for _, e := range evs {
		if e.event == "delta" {
			var d conversations.Delta
			require.NoError(t, json.Unmarshal([]byte(e.data), &d))
			texts[d.MessageID] += d.Text
		}
	}
	assert.Equal(t, "No specialist matched.", texts["msg_n"])
	assert.Equal(t, "Roll it out in stages.\n\nStill running: task_1.", texts["msg_r"])
}

func TestAReplayedTurnAnswersOnlyDoneAndAFailureAnErrorEvent(t *testing.T) {
	f := &turns{post: func(conversations.PostInput) (conversations.PostResult, error) {
		return conversations.PostResult{Replayed: true, Replies: []conversations.Message{{ID: "msg_r", Content: "stored"}}}, nil
	}}
	_, evs := postTurn(t, f, `{"content":"again"}`, map[string]string{"Idempotency-Key": "k1"})
	assert.Equal(t, []string{"done"}, names(evs))

	f.post = func(conversations.PostInput) (conversations.PostResult, error) {
		return conversations.PostResult{}, apperr.New(apperr.EUPSTREAM, "no agent could answer")
	}
	resp, evs := postTurn(t, f, `{"content":"fails"}`, nil)
	assert.Equal(t, 200, resp.StatusCode, "the stream had started")
	require.Equal(t, []string{"error"}, names(evs))
	var e struct {
		Error  struct{ Code string }
		Status int
	}
	require.NoError(t, json.Unmarshal([]byte(evs[0].data), &e))
	assert.Equal(t, apperr.EUPSTREAM, e.Error.Code)
	assert.Equal(t, 502, e.Status)
}

// Refused before the first byte: a JSON error, and no turn.
func TestARefusedTurnIsAJSONErrorAndRunsNothing(t *testing.T) {
	f := &turns{post: func(conversations.PostInput) (conversations.PostResult, error) {
		return conversations.PostResult{}, nil
	}}
	for body, status := range map[string]int{`{"content":"  "}`: 400, `{"content":"hi","x":1}`: 400, `[`: 400} {
		resp, _ := postTurn(t, f, body, nil)
		assert.Equal(t, status, resp.StatusCode, body)
		assert.Equal(t, "application/json", resp.Headers["Content-Type"], body)
	}
	resp, err := turnRouter(f).ServeStream(context.Background(), restRequest("POST", "/v1/conversations/{id}/messages",
		"/v1/conversations/conv_2/messages", `{"content":"hi"}`, map[string]string{"Accept": "text/event-stream"}, map[string]string{"id": "conv_2"}))
	require.NoError(t, err)
	assert.Equal(t, 404, resp.StatusCode, "another team's conversation")
	assert.Zero(t, f.posted)
}

// log is a stream of n events.
type log struct {
	mu  sync.Mutex
	evs []streams.Event
}

func (l *log) StreamEvents(_ context.Context, teamID, stream string, after int64, limit int) ([]streams.Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []streams.Event
	for _, e := range l.evs {
		if teamID == "team_a" && stream == "session#ses_1" && e.Seq > after && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (l *log) StreamHead(ctx context.Context, teamID, stream string) (int64, error) {
	evs, _ := l.StreamEvents(ctx, teamID, stream, 0, 1000)
	if len(evs) == 0 {
		return 0, nil
	}
	return evs[len(evs)-1].Seq, nil
}

func sessionRouter(l *log, ended bool) *httpapi.Router {
	rt := httpapi.NewStreamRouter(slog.New(slog.NewTextHandler(io.Discard, nil)))
	streamsapi.EventRoutes(rt, l, streamsapi.Stream{Route: "GET /v1/sessions/{id}/events", Name: streams.Session,
		Run: func(_ context.Context, teamID, id string) (bool, error) {
			if teamID != "team_a" || id != "ses_1" {
				return false, apperr.NotFound("session", id)
			}
			return ended, nil
		}})
	return rt
}

func getEvents(t *testing.T, rt *httpapi.Router, id string, headers map[string]string) (*events.APIGatewayProxyStreamingResponse, []sseEvent) {
	t.Helper()
	resp, err := rt.ServeStream(context.Background(), restRequest("GET", "/v1/sessions/{id}/events", "/v1/sessions/"+id+"/events", "", headers, map[string]string{"id": id}))
	require.NoError(t, err)
	return resp, read(t, resp.Body)
}

func TestARunsStreamResumesAfterLastEventIDAndEndsWithTheRun(t *testing.T) {
	l := &log{}
	for i := int64(1); i <= 5; i++ {
		l.evs = append(l.evs, streams.Event{Seq: i, Type: "SessionStageCompleted", Detail: json.RawMessage(`{"stage":` + string(rune('0'+i)) + `}`)})
	}
	rt := sessionRouter(l, true)
	resp, evs := getEvents(t, rt, "ses_1", nil)
	assert.Equal(t, 200, resp.StatusCode)
	require.Len(t, evs, 5, "from the run's beginning, closed at its end")
	assert.Equal(t, sseEvent{id: "3", event: "SessionStageCompleted", data: `{"stage":3}`}, evs[2])
	_, evs = getEvents(t, rt, "ses_1", map[string]string{"Last-Event-ID": "2"})
	require.Len(t, evs, 3)
	assert.Equal(t, "3", evs[0].id, "exactly the rest")
	resp, _ = getEvents(t, rt, "ses_1", map[string]string{"Last-Event-ID": "5"})
	assert.Equal(t, 204, resp.StatusCode, "an ended run the client has read")
	for _, bad := range []string{"x", "-1", "1.5"} {
		resp, _ = getEvents(t, rt, "ses_1", map[string]string{"Last-Event-ID": bad})
		assert.Equal(t, 400, resp.StatusCode, bad)
	}
	resp, _ = getEvents(t, rt, "ses_2", nil)
	assert.Equal(t, 404, resp.StatusCode)
}

// A running run's stream sends what is stored while it is open.
func TestARunningRunsStreamSendsNewEvents(t *testing.T) {
	l := &log{evs: []streams.Event{{Seq: 1, Type: "SessionStatusChanged", Detail: json.RawMessage(`{}`)}}}
	resp, err := sessionRouter(l, false).ServeStream(context.Background(),
		restRequest("GET", "/v1/sessions/{id}/events", "/v1/sessions/ses_1/events", "", nil, map[string]string{"id": "ses_1"}))
	require.NoError(t, err)
	br := bufio.NewReader(resp.Body)
	readEvent := func() string {
		var b strings.Builder
		for {
			line, err := br.ReadString('\n')
			require.NoError(t, err)
			if line == "\n" {
				return b.String()
			}
			b.WriteString(line)
		}
	}
	assert.Contains(t, readEvent(), "id: 1\n")
	l.mu.Lock()
	l.evs = append(l.evs, streams.Event{Seq: 2, Type: "SessionStageCompleted", Detail: json.RawMessage(`{}`)})
	l.mu.Unlock()
	assert.Contains(t, readEvent(), "id: 2\nevent: SessionStageCompleted\n")
	require.NoError(t, resp.Close(), "the client goes away")
}
