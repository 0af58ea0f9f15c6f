package openai_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/models/internal/providertest"
	"github.com/conclave-ai/conclave/shared/models/openai"
)

func model(s *providertest.Server) openai.Model {
	return openai.Model{BaseURL: s.URL + "/v1", APIKey: "sk-test", DefaultModelID: "gpt-4o-mini"}
}

func TestCompatibleChat(t *testing.T) {
	s := providertest.Serve(t)
	s.Body = providertest.Recorded(t, "openai-chat-text.json")
	resp, err := model(s).Converse(context.Background(), providertest.ToolRequest())
	require.NoError(t, err)
	assert.Equal(t, "Split the service along its data boundaries first.", resp.Text)
	assert.Equal(t, 120, resp.InputTokens)
	assert.Equal(t, 11, resp.OutputTokens)
	assert.Equal(t, "/v1/chat/completions", s.Path)
	assert.Equal(t, "Bearer sk-test", s.Auth)
	assert.Equal(t, "anthropic.claude-3-5-haiku-20241022-v1:0", s.Got["model"])
	msgs := s.Got["messages"].([]any)
	require.Len(t, msgs, 4)
	assert.Equal(t, "system", msgs[0].(map[string]any)["role"])
	call := msgs[2].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	assert.Equal(t, "t1", call["id"])
	assert.Equal(t, "check_task_status", call["function"].(map[string]any)["name"])
	assert.Equal(t, "t1", msgs[3].(map[string]any)["tool_call_id"])
	tool := s.Got["tools"].([]any)[0].(map[string]any)
	assert.Equal(t, "function", tool["type"])
	assert.Equal(t, "object", tool["function"].(map[string]any)["parameters"].(map[string]any)["type"])
	assert.NotContains(t, s.Got, "metadata", "request metadata stays out of compatible endpoints")

	s.Body = providertest.Recorded(t, "openai-chat-toolcall.json")
	resp, err = model(s).Converse(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "status?"}}})
	require.NoError(t, err)
	assert.Equal(t, "gpt-4o-mini", resp.ModelID)
	require.Len(t, resp.ToolCalls, 1)
	assert.Equal(t, models.ToolCall{ID: "call_Xy12", Name: "check_task_status", Input: `{"task_id":"task_01"}`}, resp.ToolCalls[0])

	s.Body = providertest.Recorded(t, "openai-chat-filtered.json")
	resp, err = model(s).Converse(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "x"}}})
	require.NoError(t, err)
	assert.True(t, resp.Refused)
}

func TestErrorsMapToErrModel(t *testing.T) {
	s := providertest.Serve(t)
	s.Status, s.Body = 429, providertest.Recorded(t, "openai-error-429.json")
	_, err := model(s).Converse(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "x"}}})
	assert.ErrorIs(t, err, models.ErrModel)
	assert.Contains(t, err.Error(), "HTTP 429: Rate limit reached")

	s.Status, s.Body = 502, "<html>bad gateway</html>"
	_, err = model(s).Converse(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "x"}}})
	assert.ErrorIs(t, err, models.ErrModel)
	assert.Contains(t, err.Error(), "HTTP 502")

	s.Status, s.Body = 200, `{"choices":[]}`
	_, err = model(s).Converse(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "x"}}})
	assert.ErrorIs(t, err, models.ErrModel)
	assert.Contains(t, err.Error(), "malformed")

	_, err = openai.Model{BaseURL: "http://127.0.0.1:1"}.Converse(context.Background(), models.Request{})
	assert.ErrorIs(t, err, models.ErrModel, "connection refused")
}

// A server that ignores stream: true and answers whole: OnDelta gets the
// whole text once, after the answer.
func TestOnDeltaGetsTheWholeTextOnceFromAServerThatDoesNotStream(t *testing.T) {
	s := providertest.Serve(t)
	s.Body = providertest.Recorded(t, "openai-chat-text.json")
	var pieces []string
	req := providertest.ToolRequest()
	req.OnDelta = func(text string) { pieces = append(pieces, text) }
	resp, err := model(s).Converse(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, []string{resp.Text}, pieces)
	assert.Equal(t, true, s.Got["stream"], "asked to stream")
}

func sse(chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	return b.String()
}

// With OnDelta the adapter streams: the pieces as the server sends them,
// the text they make, the usage of the last chunk; a tool call's pieces
// are assembled by index; without OnDelta it asks for no stream.
func TestAStreamedAnswerIsTheAnswerItsPiecesMake(t *testing.T) {
	s := providertest.Serve(t)
	s.Headers = map[string]string{"Content-Type": "text/event-stream"}
	s.Body = sse(
		`{"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"content":"Split the service "},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"content":"along its data boundaries."},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":120,"completion_tokens":11}}`,
		`[DONE]`)
	var pieces []string
	req := providertest.ToolRequest()
	req.OnDelta = func(text string) { pieces = append(pieces, text) }
	resp, err := model(s).Converse(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, []string{"Split the service ", "along its data boundaries."}, pieces)
	assert.Equal(t, "Split the service along its data boundaries.", resp.Text)
	assert.Equal(t, 120, resp.InputTokens)
	assert.Equal(t, 11, resp.OutputTokens)
	assert.Equal(t, true, s.Got["stream"])
	assert.Equal(t, map[string]any{"include_usage": true}, s.Got["stream_options"])

	s.Body = sse(
		`{"choices":[{"index":0,"delta":{"content":"Let me check."}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"check_task_status","arguments":""}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"task_id\":"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"task_01\"}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"get_agent_inbox","arguments":""}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`[DONE]`)
	pieces = nil
	resp, err = model(s).Converse(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, "Let me check.", resp.Text)
	assert.Equal(t, []models.ToolCall{{ID: "call_1", Name: "check_task_status", Input: `{"task_id":"task_01"}`}, {ID: "call_2", Name: "get_agent_inbox", Input: "{}"}}, resp.ToolCalls)
	assert.Positive(t, resp.InputTokens, "no usage sent: estimated")
	assert.Positive(t, resp.OutputTokens)

	s.Headers, s.Body = nil, providertest.Recorded(t, "openai-chat-text.json")
	_, err = model(s).Converse(context.Background(), providertest.ToolRequest())
	require.NoError(t, err)
	assert.NotContains(t, s.Got, "stream", "no watcher: no stream")
}

// A stream cut before its finish reason, or carrying an error, is a
// model error, never a shorter answer.
func TestACutStreamIsAModelError(t *testing.T) {
	s := providertest.Serve(t)
	s.Headers = map[string]string{"Content-Type": "text/event-stream"}
	req := models.Request{Messages: []models.Message{{Role: "user", Content: "x"}}, OnDelta: func(string) {}}
	for _, body := range []string{
		sse(`{"choices":[{"index":0,"delta":{"content":"Split the"}}]}`),
		sse(`{"error":{"message":"overloaded"}}`),
		sse(`{not json`),
	} {
		s.Body = body
		_, err := model(s).Converse(context.Background(), req)
		assert.ErrorIs(t, err, models.ErrModel, body)
	}
}

// A server serving one model (ServedModelID: Ollama's, llama.cpp's,
// vLLM's) is asked for it whatever the request names, and without a key
// gets no Authorization header.
func TestAServedModelIsNamedInEveryCall(t *testing.T) {
	s := providertest.Serve(t)
	s.Body = providertest.Recorded(t, "openai-chat-text.json")
	m := openai.Model{BaseURL: s.URL + "/v1", ServedModelID: "llama3.2", DefaultModelID: "gpt-4o-mini"}
	for _, named := range []string{"anthropic.claude-3-5-haiku-20241022-v1:0", ""} {
		resp, err := m.Converse(context.Background(), models.Request{ModelID: named, Messages: []models.Message{{Role: "user", Content: "x"}}})
		require.NoError(t, err)
		assert.Equal(t, "llama3.2", s.Got["model"], "named %q", named)
		assert.Equal(t, "llama3.2", resp.ModelID)
		assert.Empty(t, s.Auth)
	}
}
