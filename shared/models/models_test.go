package models_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
)

// served is an HTTP server answering with recorded provider responses; it
// keeps the last request so tests can check what the adapter sent.
type served struct {
	*httptest.Server
	status  int
	headers map[string]string
	body    string
	path    string
	got     map[string]any
	auth    string
}

func serve(t *testing.T) *served {
	s := &served{status: 200}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		s.got = map[string]any{}
		_ = json.Unmarshal(raw, &s.got)
		s.path, s.auth = r.URL.Path, r.Header.Get("Authorization")
		for k, v := range s.headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s.status)
		_, _ = io.WriteString(w, s.body)
	}))
	t.Cleanup(s.Close)
	return s
}

func recorded(t *testing.T, name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

func bedrock(s *served) models.Bedrock {
	client := bedrockruntime.New(bedrockruntime.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(s.URL), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
	})
	return models.Bedrock{Client: client, DefaultModelID: "amazon.nova-lite-v1:0"}
}

var toolReq = models.Request{
	ModelID: "anthropic.claude-3-5-haiku-20241022-v1:0", System: "You are Kyra.", MaxTokens: 500,
	Messages: []models.Message{
		{Role: "user", Content: "How many signups per week?"},
		{Role: "assistant", ToolCalls: []models.ToolCall{{ID: "t1", Name: "check_task_status", Input: `{"task_id":"task_1"}`}}},
		{Role: "tool", Content: "completed: 42 per week", ToolCallID: "t1"},
	},
	Tools: []models.Tool{{Name: "delegate_task", Description: "Delegate a task"}, {Name: "check_task_status", Description: "Check a task"}},
}

func TestBedrockConverseText(t *testing.T) {
	s := serve(t)
	s.body = recorded(t, "bedrock-converse-text.json")
	resp, err := bedrock(s).Converse(context.Background(), toolReq)
	require.NoError(t, err)
	assert.Equal(t, "Check the nil map on line 12 before writing to it.", resp.Text)
	assert.Equal(t, 412, resp.InputTokens)
	assert.Equal(t, 14, resp.OutputTokens)
	assert.Equal(t, "anthropic.claude-3-5-haiku-20241022-v1:0", resp.ModelID)
	assert.False(t, resp.Refused)

	// What went over the wire: the Converse REST call with system, limits,
	// tools and the tool round trip as toolUse / toolResult blocks.
	assert.Equal(t, "/model/anthropic.claude-3-5-haiku-20241022-v1:0/converse", s.path)
	assert.Equal(t, "You are Kyra.", s.got["system"].([]any)[0].(map[string]any)["text"])
	assert.EqualValues(t, 500, s.got["inferenceConfig"].(map[string]any)["maxTokens"])
	tools := s.got["toolConfig"].(map[string]any)["tools"].([]any)
	require.Len(t, tools, 2)
	spec := tools[0].(map[string]any)["toolSpec"].(map[string]any)
	assert.Equal(t, "delegate_task", spec["name"])
	assert.Equal(t, "object", spec["inputSchema"].(map[string]any)["json"].(map[string]any)["type"])
	msgs := s.got["messages"].([]any)
	require.Len(t, msgs, 3)
	use := msgs[1].(map[string]any)["content"].([]any)[0].(map[string]any)["toolUse"].(map[string]any)
	assert.Equal(t, "t1", use["toolUseId"])
	assert.Equal(t, "task_1", use["input"].(map[string]any)["task_id"])
	result := msgs[2].(map[string]any)
	assert.Equal(t, "user", result["role"])
	assert.Equal(t, "t1", result["content"].([]any)[0].(map[string]any)["toolResult"].(map[string]any)["toolUseId"])
	assert.True(t, strings.HasPrefix(s.auth, "AWS4-HMAC-SHA256"), "requests are SigV4 signed")
}

func TestBedrockConverseToolUseAndGuardrail(t *testing.T) {
	s := serve(t)
	s.body = recorded(t, "bedrock-converse-tooluse.json")
	resp, err := bedrock(s).Converse(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "signups?"}}})
	require.NoError(t, err)
	assert.Equal(t, "amazon.nova-lite-v1:0", resp.ModelID, "the default model when the request names none")
	require.Len(t, resp.ToolCalls, 1)
	c := resp.ToolCalls[0]
	assert.Equal(t, "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", c.ID)
	assert.Equal(t, "delegate_task", c.Name)
	var input map[string]string
	require.NoError(t, json.Unmarshal([]byte(c.Input), &input))
	assert.Equal(t, "dana", input["to_agent"])
	assert.Equal(t, 655+88, resp.InputTokens+resp.OutputTokens)

	s.body = recorded(t, "bedrock-converse-guardrail.json")
	resp, err = bedrock(s).Converse(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "x"}}})
	require.NoError(t, err)
	assert.True(t, resp.Refused)
}

func TestBedrockErrorsMapToErrModel(t *testing.T) {
	s := serve(t)
	for _, tc := range []struct {
		status int
		typ    string
		msg    string
	}{
		{429, "ThrottlingException", "Too many requests, please wait before trying again."},
		{400, "ValidationException", "The provided model identifier is invalid."},
		{424, "ModelErrorException", "The model failed to process the request."},
	} {
		s.status, s.headers, s.body = tc.status, map[string]string{"X-Amzn-Errortype": tc.typ}, `{"message":"`+tc.msg+`"}`
		_, err := bedrock(s).Converse(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "x"}}})
		require.Error(t, err, tc.typ)
		assert.ErrorIs(t, err, models.ErrModel, tc.typ)
		assert.Contains(t, err.Error(), tc.typ)
		assert.Contains(t, err.Error(), tc.msg)
	}
	// A deadline is reported as itself, so callers can tell a timeout.
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	time.Sleep(time.Millisecond)
	_, err := bedrock(s).Converse(ctx, models.Request{Messages: []models.Message{{Role: "user", Content: "x"}}})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, errors.Is(err, models.ErrModel))
}

func openai(s *served) models.OpenAI {
	return models.OpenAI{BaseURL: s.URL + "/v1", APIKey: "sk-test", DefaultModelID: "gpt-4o-mini"}
}

func TestOpenAICompatibleChat(t *testing.T) {
	s := serve(t)
	s.body = recorded(t, "openai-chat-text.json")
	resp, err := openai(s).Converse(context.Background(), toolReq)
	require.NoError(t, err)
	assert.Equal(t, "Split the service along its data boundaries first.", resp.Text)
	assert.Equal(t, 120, resp.InputTokens)
	assert.Equal(t, 11, resp.OutputTokens)
	assert.Equal(t, "/v1/chat/completions", s.path)
	assert.Equal(t, "Bearer sk-test", s.auth)
	assert.Equal(t, "anthropic.claude-3-5-haiku-20241022-v1:0", s.got["model"])
	msgs := s.got["messages"].([]any)
	require.Len(t, msgs, 4)
	assert.Equal(t, "system", msgs[0].(map[string]any)["role"])
	call := msgs[2].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	assert.Equal(t, "t1", call["id"])
	assert.Equal(t, "check_task_status", call["function"].(map[string]any)["name"])
	assert.Equal(t, "t1", msgs[3].(map[string]any)["tool_call_id"])
	tool := s.got["tools"].([]any)[0].(map[string]any)
	assert.Equal(t, "function", tool["type"])
	assert.Equal(t, "object", tool["function"].(map[string]any)["parameters"].(map[string]any)["type"])

	s.body = recorded(t, "openai-chat-toolcall.json")
	resp, err = openai(s).Converse(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "status?"}}})
	require.NoError(t, err)
	assert.Equal(t, "gpt-4o-mini", resp.ModelID)
	require.Len(t, resp.ToolCalls, 1)
	assert.Equal(t, models.ToolCall{ID: "call_Xy12", Name: "check_task_status", Input: `{"task_id":"task_01"}`}, resp.ToolCalls[0])

	s.body = recorded(t, "openai-chat-filtered.json")
	resp, err = openai(s).Converse(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "x"}}})
	require.NoError(t, err)
	assert.True(t, resp.Refused)
}

func TestOpenAIErrorsMapToErrModel(t *testing.T) {
	s := serve(t)
	s.status, s.body = 429, recorded(t, "openai-error-429.json")
	_, err := openai(s).Converse(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "x"}}})
	assert.ErrorIs(t, err, models.ErrModel)
	assert.Contains(t, err.Error(), "HTTP 429: Rate limit reached")

	s.status, s.body = 502, "<html>bad gateway</html>"
	_, err = openai(s).Converse(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "x"}}})
	assert.ErrorIs(t, err, models.ErrModel)
	assert.Contains(t, err.Error(), "HTTP 502")

	s.status, s.body = 200, `{"choices":[]}`
	_, err = openai(s).Converse(context.Background(), models.Request{Messages: []models.Message{{Role: "user", Content: "x"}}})
	assert.ErrorIs(t, err, models.ErrModel)
	assert.Contains(t, err.Error(), "malformed")

	_, err = models.OpenAI{BaseURL: "http://127.0.0.1:1"}.Converse(context.Background(), models.Request{})
	assert.ErrorIs(t, err, models.ErrModel, "connection refused")
}

func TestLocalModelScriptsAndVoice(t *testing.T) {
	req := models.Request{Agent: "Luke", Skills: []string{"code-review"}, SkillNotes: []string{"Review code for bugs"}, ModelID: "amazon.nova-lite-v1:0",
		Messages: []models.Message{{Role: "user", Content: "check my loop"}}}
	a, err := models.Local{}.Converse(context.Background(), req)
	require.NoError(t, err)
	b, _ := models.Local{}.Converse(context.Background(), req)
	assert.Equal(t, a.Text, b.Text, "deterministic")
	assert.Contains(t, a.Text, "As Luke, on code review: review code for bugs.")
	assert.Equal(t, "amazon.nova-lite-v1:0", a.ModelID)
	assert.Positive(t, a.OutputTokens)

	req.Script = "refuse"
	r, err := models.Local{}.Converse(context.Background(), req)
	require.NoError(t, err)
	assert.True(t, r.Refused)
	req.Script = "fail"
	_, err = models.Local{}.Converse(context.Background(), req)
	assert.ErrorIs(t, err, models.ErrModel)
	req.Script = "timeout"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = models.Local{}.Converse(ctx, req)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

type named string

func (n named) Converse(context.Context, models.Request) (models.Response, error) {
	return models.Response{Text: string(n)}, nil
}

func TestSwitchPicksTheAgentsProvider(t *testing.T) {
	sw := models.Switch{Default: named("local"), Providers: map[string]models.Model{"bedrock": named("bedrock"), "openai": named("openai")}}
	for provider, want := range map[string]string{"": "local", "bedrock": "bedrock", "openai": "openai", "unknown": "local"} {
		r, _ := sw.Converse(context.Background(), models.Request{Provider: provider})
		assert.Equal(t, want, r.Text, provider)
	}
}
