// Package providertest replays recorded provider responses for the tests of
// the model adapters (bedrock, openai): an HTTP server answering with a
// recorded body that keeps what the adapter sent, so a test checks both the
// wire request and the mapping of the answer without a provider account.
package providertest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
)

// Server answers every request with Status, Headers and Body, and keeps the
// last request's path, JSON body and Authorization header.
type Server struct {
	*httptest.Server
	Status  int
	Headers map[string]string
	Body    string
	Path    string
	Got     map[string]any
	Auth    string
}

// Serve starts a Server answering 200 until told otherwise; it is closed
// when the test ends.
func Serve(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{Status: http.StatusOK}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		s.Got = map[string]any{}
		_ = json.Unmarshal(raw, &s.Got)
		s.Path, s.Auth = r.URL.Path, r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		for k, v := range s.Headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(s.Status)
		_, _ = io.WriteString(w, s.Body)
	}))
	tb.Cleanup(s.Close)
	return s
}

// Recorded returns the recorded response testdata/name of the package under
// test.
func Recorded(tb testing.TB, name string) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(tb, err)
	return string(b)
}

// ToolRequest is a call with a system prompt, a token limit, two tools, a
// tool round trip already in the conversation and request metadata: every
// part an adapter has to map.
func ToolRequest() models.Request {
	return models.Request{
		ModelID: "anthropic.claude-3-5-haiku-20241022-v1:0", System: "You are Kyra.", MaxTokens: 500,
		Messages: []models.Message{
			{Role: "user", Content: "How many signups per week?"},
			{Role: "assistant", ToolCalls: []models.ToolCall{{ID: "t1", Name: "check_task_status", Input: `{"task_id":"task_1"}`}}},
			{Role: "tool", Content: "completed: 42 per week", ToolCallID: "t1"},
		},
		Tools:    []models.Tool{{Name: "delegate_task", Description: "Delegate a task"}, {Name: "check_task_status", Description: "Check a task"}},
		Metadata: map[string]string{models.MetadataTeamID: "team_01", models.MetadataAgent: "kyra"},
	}
}
