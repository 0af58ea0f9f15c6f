package cloud_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/budget"
	"github.com/conclave-ai/conclave/shared/wire/providers"
)

// chatServer is a small OpenAI-compatible server, as Ollama, llama.cpp
// and vLLM serve one at /v1/chat/completions, with one model: a request
// naming another model is a 404 (Ollama's "model not found"); a request
// offering tools gets a call of its first tool until the conversation
// holds a tool result, then a text answer, streamed when asked.
type chatServer struct {
	*httptest.Server
	model string

	mu    sync.Mutex
	auths []string
}

// chatBody is what the server reads of a request.
type chatBody struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role string `json:"role"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string         `json:"name"`
			Parameters map[string]any `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

func serveChat(t *testing.T, model string) *chatServer {
	t.Helper()
	s := &chatServer{model: model}
	s.Server = httptest.NewServer(http.HandlerFunc(s.complete))
	t.Cleanup(s.Close)
	return s
}

func (s *chatServer) complete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.auths = append(s.auths, r.Header.Get("Authorization"))
	s.mu.Unlock()
	var body chatBody
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&body) != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	if body.Model != s.model {
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": fmt.Sprintf("model %q not found, try pulling it first", body.Model), "type": "api_error"}})
		return
	}
	last := body.Messages[len(body.Messages)-1].Role
	if len(body.Tools) > 0 && last != "tool" {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"model":%q,"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",`+
			`"function":{"name":%q,"arguments":"{\"task_id\":\"task_1\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":40,"completion_tokens":9}}`,
			s.model, body.Tools[0].Function.Name)
		return
	}
	text := "Task task_1 is done."
	if !body.Stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"model":%q,"choices":[{"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":6}}`, s.model, text)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, piece := range strings.SplitAfter(text, " ") {
		fmt.Fprintf(w, "data: {\"model\":%q,\"choices\":[{\"delta\":{\"content\":%q}}]}\n\n", s.model, piece)
	}
	fmt.Fprintf(w, "data: {\"model\":%q,\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", s.model)
	fmt.Fprintf(w, "data: {\"model\":%q,\"choices\":[],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":6}}\n\ndata: [DONE]\n\n", s.model)
}

// sent are the Authorization headers of the requests so far.
func (s *chatServer) sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.auths)
}

// noAgents is an agent store without agents (the local model's reader,
// which these calls never reach).
type noAgents struct{}

func (noAgents) GetAgent(_ context.Context, _, slug string) (agents.Agent, error) {
	return agents.Agent{}, apperr.NotFound("agent", slug)
}

// make run against a local OpenAI-compatible server (docs/local-cloud.md):
// MODEL_PROVIDER=openai, OPENAI_BASE_URL and OPENAI_MODEL in the
// developer's environment reach every function that calls models, as the
// local cloud configures it, and its model port then talks to the server:
// every call names the server's model (not the tier's Bedrock id, not
// none), without a key, a tool call and its result round-trip, and a
// streamed answer streams.
func TestMakeRunTalksToALocalOpenAICompatibleServer(t *testing.T) {
	srv := serveChat(t, "llama3.2")
	t.Setenv(settings.EnvModelProvider, "openai")
	t.Setenv(settings.EnvOpenAIBaseURL, srv.URL+"/v1")
	t.Setenv(settings.EnvOpenAIModel, "llama3.2")
	t.Setenv(settings.EnvOpenAIAPIKey, "")
	ctx := context.Background()
	tools := []models.Tool{{Name: "check_task_status", Description: "Check a task", Schema: map[string]any{"type": "object",
		"properties": map[string]any{"task_id": map[string]any{"type": "string"}}, "required": []any{"task_id"}}}}
	var callers []string
	for _, f := range manifest.Functions {
		// The model port's variables (the agents function reads
		// MODEL_PROVIDER too, for the models it offers, and calls none).
		if !slices.Contains(manifest.Env[f.Name], settings.EnvOpenAIBaseURL) {
			continue
		}
		callers = append(callers, f.Name)
		cfg, err := resources().FunctionConfig(f.Name)
		require.NoError(t, err, f.Name)
		m, err := providers.New(cfg, aws.Config{Region: cloud.Region}, noAgents{}, budget.Guard{})
		require.NoError(t, err, f.Name)

		// An agent's turn: the tier's model id, the agent's tools.
		req := models.Request{ModelID: routing.DefaultTierModels[routing.Tier1], System: "You are Kyra.", MaxTokens: 500, Tools: tools,
			Messages: []models.Message{{Role: "user", Content: "Is task_1 done?"}},
			Metadata: map[string]string{models.MetadataTeamID: "t", models.MetadataAgent: "kyra"}}
		resp, err := m.Converse(ctx, req)
		require.NoError(t, err, f.Name)
		require.Len(t, resp.ToolCalls, 1, f.Name)
		assert.Equal(t, models.ToolCall{ID: "call_1", Name: "check_task_status", Input: `{"task_id":"task_1"}`}, resp.ToolCalls[0], f.Name)
		assert.Equal(t, "llama3.2", resp.ModelID, f.Name)
		req.Messages = append(req.Messages, models.Message{Role: "assistant", ToolCalls: resp.ToolCalls},
			models.Message{Role: "tool", Content: "completed", ToolCallID: resp.ToolCalls[0].ID})
		resp, err = m.Converse(ctx, req)
		require.NoError(t, err, f.Name)
		assert.Equal(t, "Task task_1 is done.", resp.Text, f.Name)
		assert.Equal(t, 50, resp.InputTokens, f.Name)

		// A call naming no model (a plan's synthesis, a session's turn),
		// streamed.
		var deltas []string
		resp, err = m.Converse(ctx, models.Request{Messages: []models.Message{{Role: "user", Content: "Sum it up"}}, MaxTokens: 100,
			OnDelta: func(s string) { deltas = append(deltas, s) }})
		require.NoError(t, err, f.Name)
		assert.Equal(t, "Task task_1 is done.", resp.Text, f.Name)
		assert.Equal(t, []string{"Task ", "task_1 ", "is ", "done."}, deltas, f.Name)
	}
	assert.Subset(t, callers, []string{"conversations", "streams", "task-worker", "plan-steps", "session-steps", "consultations"})
	auths := srv.sent()
	assert.Len(t, auths, 3*len(callers))
	assert.Equal(t, []string{""}, slices.Compact(auths), "no key: no Authorization header")

	// A dummy key, which some servers want, is sent as a bearer token.
	t.Setenv(settings.EnvOpenAIAPIKey, "ollama")
	cfg, err := resources().FunctionConfig("conversations")
	require.NoError(t, err)
	m, err := providers.New(cfg, aws.Config{Region: cloud.Region}, noAgents{}, budget.Guard{})
	require.NoError(t, err)
	_, err = m.Converse(ctx, models.Request{Messages: []models.Message{{Role: "user", Content: "hi"}}})
	require.NoError(t, err)
	auths = srv.sent()
	assert.Equal(t, "Bearer ollama", auths[len(auths)-1])
}

// Without OPENAI_MODEL each call names its own model, as a hosted
// endpoint serving many expects: a local server that has no model of
// that name answers 404, a model error naming it.
func TestWithoutOpenAIModelACallNamesItsOwn(t *testing.T) {
	srv := serveChat(t, "llama3.2")
	t.Setenv(settings.EnvModelProvider, "openai")
	t.Setenv(settings.EnvOpenAIBaseURL, srv.URL+"/v1")
	t.Setenv(settings.EnvOpenAIModel, "")
	cfg, err := resources().FunctionConfig("conversations")
	require.NoError(t, err)
	m, err := providers.New(cfg, aws.Config{Region: cloud.Region}, noAgents{}, budget.Guard{})
	require.NoError(t, err)
	_, err = m.Converse(context.Background(), models.Request{ModelID: "llama3.2", Messages: []models.Message{{Role: "user", Content: "hi"}}})
	require.NoError(t, err)
	_, err = m.Converse(context.Background(), models.Request{ModelID: routing.DefaultTierModels[routing.Tier1], Messages: []models.Message{{Role: "user", Content: "hi"}}})
	assert.ErrorIs(t, err, models.ErrModel)
	assert.ErrorContains(t, err, `HTTP 404: model "anthropic.claude-3-5-haiku-20241022-v1:0" not found`)
}
