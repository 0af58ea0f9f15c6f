package a2afn_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// endingTasks is noTasks whose task_1 completes at the first wait.
type endingTasks struct{ noTasks }

func (endingTasks) WaitUntil(ctx context.Context, teamID, id string, _ time.Duration, _ func(tasks.Task) bool) (tasks.Task, error) {
	t, err := noTasks{}.Get(ctx, teamID, id)
	t.Status, t.Result = tasks.Completed, "Done."
	return t, err
}

// streamed calls ServeStream as the streaming API would and reads the
// whole body.
func (f *fixture) streamed(t *testing.T, id, key, body string, headers map[string]string) (*events.APIGatewayProxyStreamingResponse, string) {
	t.Helper()
	h := map[string]string{"Content-Type": "application/json"}
	if key != "" {
		h["X-Api-Key"] = key
	}
	for k, v := range headers {
		h[k] = v
	}
	res, err := f.h.ServeStream(context.Background(), events.APIGatewayProxyRequest{
		Resource: "/a2a/{a2a_id}", Path: "/a2a/" + id, HTTPMethod: http.MethodPost, Headers: h,
		PathParameters: map[string]string{"a2a_id": id}, Body: body,
		RequestContext: events.APIGatewayProxyRequestContext{RequestID: "req-1", DomainName: "stream.example", Stage: "dev"},
	})
	require.NoError(t, err)
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(raw)
}

// sseResults are the results (or errors) of an SSE body's data lines.
func sseResults(t *testing.T, body string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var resp map[string]any
		require.NoError(t, json.Unmarshal([]byte(data), &resp), data)
		assert.Equal(t, "2.0", resp["jsonrpc"])
		assert.Equal(t, float64(7), resp["id"], "each event answers the request")
		if e, isErr := resp["error"].(map[string]any); isErr {
			out = append(out, map[string]any{"error": e})
			continue
		}
		out = append(out, resp["result"].(map[string]any))
	}
	return out
}

func streamingFixture(t *testing.T) *fixture {
	f := newFixture(t)
	f.rate.PerSecond = 100
	f.h.Streaming, f.h.StreamURL = true, "https://stream.example/dev"
	f.h.Service.Tasks = endingTasks{}
	return f
}

func TestAStreamedSubscriptionIsServerSentEvents(t *testing.T) {
	f := streamingFixture(t)
	res, body := f.streamed(t, f.idA, f.keyA, `{"jsonrpc":"2.0","id":7,"method":"SubscribeToTask","params":{"id":"task_1"}}`, map[string]string{"A2A-Version": "1.0"})
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	assert.Equal(t, "text/event-stream", res.Headers["Content-Type"])
	assert.Equal(t, "no-cache", res.Headers["Cache-Control"])
	assert.NotContains(t, res.Headers, "Connection", "hop-by-hop: the gateway's")
	got := sseResults(t, body)
	require.Len(t, got, 3, body)
	assert.Equal(t, "TASK_STATE_WORKING", got[0]["task"].(map[string]any)["status"].(map[string]any)["state"])
	artifact := got[1]["artifactUpdate"].(map[string]any)["artifact"].(map[string]any)
	assert.Equal(t, "Done.", artifact["parts"].([]any)[0].(map[string]any)["text"])
	final := got[2]["statusUpdate"].(map[string]any)
	assert.Equal(t, "TASK_STATE_COMPLETED", final["status"].(map[string]any)["state"])

	// 0.3's method name and shapes, through a2a-go's 0.3 layer.
	_, body = f.streamed(t, f.idA, f.keyA, `{"jsonrpc":"2.0","id":7,"method":"tasks/resubscribe","params":{"id":"task_1"}}`, nil)
	got = sseResults(t, body)
	require.Len(t, got, 3, body)
	assert.Equal(t, true, got[2]["final"], "0.3's final flag on the terminal status")
}

func TestTheStreamingEndpointAnswersEveryMethod(t *testing.T) {
	f := streamingFixture(t)
	res, body := f.streamed(t, f.idA, f.keyA, v1, map[string]string{"A2A-Version": "1.0"})
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "application/json", res.Headers["Content-Type"])
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &out), body)
	assert.Equal(t, "task_1", out["result"].(map[string]any)["id"])

	// Its extended card lists the streaming endpoint, the URL it knows.
	_, body = f.streamed(t, f.idA, f.keyA, `{"jsonrpc":"2.0","id":2,"method":"GetExtendedAgentCard","params":{}}`, map[string]string{"A2A-Version": "1.0"})
	require.NoError(t, json.Unmarshal([]byte(body), &out), body)
	card := out["result"].(map[string]any)
	assert.Equal(t, true, card["capabilities"].(map[string]any)["streaming"])
	iface := card["supportedInterfaces"].([]any)[0].(map[string]any)
	assert.Equal(t, "https://stream.example/dev/a2a/"+f.idA, iface["url"])
}

func TestEveryFailureOnTheStreamingAPIIsAJSONRPCError(t *testing.T) {
	f := streamingFixture(t)
	stream := `{"jsonrpc":"2.0","id":7,"method":"SubscribeToTask","params":{"id":"task_1"}}`
	cases := []struct {
		name, id, key, body string
		status              int
		code                string
	}{
		{"no key", f.idA, "", stream, 401, apperr.EUNAUTHORIZED},
		{"bad key", f.idA, "ck_nope", stream, 401, apperr.EUNAUTHORIZED},
		{"another team's agent", f.idB, f.keyA, stream, 404, apperr.ENOTFOUND},
		{"unknown agent", "a2a_00000000000000000000000000000000", f.keyA, stream, 404, apperr.ENOTFOUND},
		{"body over 256 KiB", f.idA, f.keyA, `{"x":"` + strings.Repeat("a", 300<<10) + `"}`, 413, apperr.ETOOLARGE},
	}
	for _, c := range cases {
		res, body := f.streamed(t, c.id, c.key, c.body, map[string]string{"A2A-Version": "1.0"})
		assert.Equal(t, c.status, res.StatusCode, c.name)
		assert.Equal(t, "application/json", res.Headers["Content-Type"], c.name)
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &out), body)
		_, data := rpcError(t, out)
		assert.Equal(t, c.code, data["code"], c.name)
		assert.Equal(t, "req-1", data["request_id"], c.name)
	}

	// Another team's task, in the stream: the protocol's TaskNotFound as
	// its one event.
	res, body := f.streamed(t, f.idA, f.keyA, `{"jsonrpc":"2.0","id":7,"method":"SubscribeToTask","params":{"id":"task_9"}}`, map[string]string{"A2A-Version": "1.0"})
	require.Equal(t, http.StatusOK, res.StatusCode)
	got := sseResults(t, body)
	require.Len(t, got, 1, body)
	assert.Equal(t, float64(-32001), got[0]["error"].(map[string]any)["code"])
}

func TestTheCardListsTheStreamingEndpointFirst(t *testing.T) {
	f := newFixture(t)
	f.h.StreamURL = "https://stream.example/dev"
	_, card := f.call(t, "GET /a2a/{a2a_id}/.well-known/agent-card.json", f.idA, "", "", nil)
	assert.Equal(t, true, card["capabilities"].(map[string]any)["streaming"])
	var urls []string
	for _, i := range card["supportedInterfaces"].([]any) {
		iface := i.(map[string]any)
		urls = append(urls, iface["url"].(string)+" "+iface["protocolVersion"].(string))
	}
	stream, api := "https://stream.example/dev/a2a/"+f.idA, "https://api.example/a2a/"+f.idA
	assert.Equal(t, []string{stream + " 1.0", api + " 1.0", stream + " 0.3", api + " 0.3"}, urls)
	assert.Equal(t, stream, card["url"], "a 0.3 client's url: the streaming endpoint too")
}

// On the HTTP API, which buffers every answer, a streaming method answers
// its whole stream at once.
func TestTheHTTPAPIAnswersAStreamAtOnce(t *testing.T) {
	f := streamingFixture(t)
	f.h.Streaming = false
	res, err := f.h.Serve(context.Background(), events.APIGatewayV2HTTPRequest{
		RouteKey: "POST /a2a/{a2a_id}", PathParameters: map[string]string{"a2a_id": f.idA},
		Headers:        map[string]string{"x-api-key": f.keyA, "a2a-version": "1.0"},
		Body:           `{"jsonrpc":"2.0","id":7,"method":"SubscribeToTask","params":{"id":"task_1"}}`,
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "req-1", DomainName: "api.example"},
	})
	require.NoError(t, err)
	assert.Equal(t, "text/event-stream", res.Headers["Content-Type"])
	assert.Len(t, sseResults(t, res.Body), 3, res.Body)
}
