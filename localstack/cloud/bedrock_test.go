package cloud_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/localstack/servicemodel"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/models/bedrock"
	"github.com/conclave-ai/conclave/shared/models/localmodel"
)

// mustBedrockServiceModel loads the bedrock-runtime model of the botocore
// in moto's virtualenv (make venv; CONCLAVE_VENV names another).
func mustBedrockServiceModel(tb testing.TB) *servicemodel.Model {
	tb.Helper()
	venv := os.Getenv("CONCLAVE_VENV")
	if venv == "" {
		venv = "../../.local/venv"
	}
	path, err := servicemodel.Find(venv, "bedrock-runtime")
	require.NoError(tb, err, "run make venv")
	m, err := servicemodel.Load(path)
	require.NoError(tb, err)
	return m
}

// recording is a model that keeps the request it got.
type recording struct {
	got  models.Request
	resp models.Response
	err  error
}

func (r *recording) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	r.got = req
	if r.err != nil {
		return models.Response{}, r.err
	}
	return r.resp, nil
}

func mustBedrockEdge(t *testing.T, m models.Model) (*cloud.Bedrock, *httptest.Server) {
	t.Helper()
	b := cloud.NewBedrock(mustBedrockServiceModel(t), m, slog.New(slog.NewTextHandler(io.Discard, nil)))
	s := httptest.NewServer(b)
	t.Cleanup(s.Close)
	return b, s
}

const validConverse = `{
  "messages": [
    {"role": "user", "content": [{"text": "Sum 2 and 3."}]},
    {"role": "assistant", "content": [{"text": "Let me ask."}, {"toolUse": {"toolUseId": "call-1", "name": "delegate_task", "input": {"to_agent": "dana"}}}]},
    {"role": "user", "content": [{"toolResult": {"toolUseId": "call-1", "content": [{"text": "5"}]}}, {"text": "Thanks."}]}
  ],
  "system": [{"text": "You are Kyra."}],
  "inferenceConfig": {"maxTokens": 500},
  "toolConfig": {"tools": [{"toolSpec": {"name": "delegate_task", "description": "Delegate a task.",
    "inputSchema": {"json": {"type": "object", "properties": {"to_agent": {"type": "string", "description": "slug"}}, "required": ["to_agent"]}}}}]},
  "requestMetadata": {"team_id": "team_1", "agent": "kyra"}
}`

func post(t *testing.T, url, modelID, body string) (*http.Response, map[string]any) {
	t.Helper()
	resp, err := http.Post(url+"/model/"+modelID+"/converse", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp, out
}

// A valid Converse request reaches the model as the models port's request
// and its answer comes back in Converse's shape.
func TestBedrockConverseValidRequest(t *testing.T) {
	m := &recording{resp: models.Response{ToolCalls: []models.ToolCall{{ID: "call-2", Name: "delegate_task", Input: `{"to_agent":"luke"}`}}, InputTokens: 40, OutputTokens: 7}}
	b, s := mustBedrockEdge(t, m)
	resp, out := post(t, s.URL, "anthropic.claude-3-5-haiku-20241022-v1:0", validConverse)
	require.Equal(t, http.StatusOK, resp.StatusCode, out)

	assert.Equal(t, "anthropic.claude-3-5-haiku-20241022-v1:0", m.got.ModelID)
	assert.Equal(t, "You are Kyra.", m.got.System)
	assert.Equal(t, 500, m.got.MaxTokens)
	assert.Equal(t, map[string]string{"team_id": "team_1", "agent": "kyra"}, m.got.Metadata)
	require.Len(t, m.got.Tools, 1)
	assert.Equal(t, "delegate_task", m.got.Tools[0].Name)
	assert.Equal(t, []models.Message{
		{Role: "user", Content: "Sum 2 and 3."},
		{Role: "assistant", Content: "Let me ask.", ToolCalls: []models.ToolCall{{ID: "call-1", Name: "delegate_task", Input: `{"to_agent": "dana"}`}}},
		{Role: "tool", ToolCallID: "call-1", Content: "5"},
		{Role: "user", Content: "Thanks."},
	}, m.got.Messages)

	assert.Equal(t, "tool_use", out["stopReason"])
	assert.Equal(t, map[string]any{"inputTokens": 40.0, "outputTokens": 7.0, "totalTokens": 47.0}, out["usage"])
	content := out["output"].(map[string]any)["message"].(map[string]any)["content"].([]any)
	require.Len(t, content, 1)
	assert.Equal(t, "call-2", content[0].(map[string]any)["toolUse"].(map[string]any)["toolUseId"])
	assert.Equal(t, map[string]int64{"Converse": 1}, b.Counts())
}

// Each malformed request is refused with Bedrock's 400 ValidationException
// naming the rule it breaks, and counted.
func TestBedrockConverseRejectsMalformedRequests(t *testing.T) {
	_, s := mustBedrockEdge(t, &recording{resp: models.Response{Text: "ok"}})
	edit := func(f func(req map[string]any)) string {
		var req map[string]any
		require.NoError(t, json.Unmarshal([]byte(validConverse), &req))
		f(req)
		b, _ := json.Marshal(req)
		return string(b)
	}
	msgs := func(req map[string]any) []any { return req["messages"].([]any) }
	spec := func(req map[string]any) map[string]any {
		return req["toolConfig"].(map[string]any)["tools"].([]any)[0].(map[string]any)["toolSpec"].(map[string]any)
	}
	for _, tc := range []struct {
		name, modelID, body, want string
	}{
		{"missing messages", "", edit(func(r map[string]any) { delete(r, "messages") }), "messages: messages: a conversation needs at least one message"},
		{"messages of the wrong type", "", edit(func(r map[string]any) { r["messages"] = "hello" }), "messages: type: must be an array"},
		{"maxTokens of the wrong type", "", edit(func(r map[string]any) { r["inferenceConfig"] = map[string]any{"maxTokens": "500"} }), "inferenceConfig.maxTokens: type: must be a number"},
		{"a role outside the enum", "", edit(func(r map[string]any) { msgs(r)[0].(map[string]any)["role"] = "robot" }), "messages[0].role: enum"},
		{"a message without content", "", edit(func(r map[string]any) { delete(msgs(r)[0].(map[string]any), "content") }), "messages[0].content: required"},
		{"an unknown member", "", edit(func(r map[string]any) { r["temperature"] = 0.5 }), "temperature: unknown-member"},
		{"a content block with two members", "", edit(func(r map[string]any) {
			msgs(r)[0].(map[string]any)["content"] = []any{map[string]any{"text": "a", "toolUse": map[string]any{"toolUseId": "x", "name": "y", "input": map[string]any{}}}}
		}), "messages[0].content[0]: union"},
		{"a tool name outside the pattern", "", edit(func(r map[string]any) { spec(r)["name"] = "delegate task" }), "toolConfig.tools[0].toolSpec.name: pattern"},
		{"a model id outside the pattern", "anthropic claude", validConverse, "modelId: pattern"},
		{"two user messages in a row", "", edit(func(r map[string]any) { r["messages"] = []any{msgs(r)[0], msgs(r)[0]} }), "messages[1].role: alternation: two user messages in a row"},
		{"an assistant message first", "", edit(func(r map[string]any) { r["messages"] = msgs(r)[1:] }), "messages[0].role: alternation: the first message must be a user message"},
		{"an unanswered toolUse", "", edit(func(r map[string]any) {
			msgs(r)[2].(map[string]any)["content"] = []any{map[string]any{"text": "never mind"}}
		}), `messages[2]: tool-result: toolUse "call-1" of messages[1] is not answered`},
		{"a toolUse in the last message", "", edit(func(r map[string]any) { r["messages"] = msgs(r)[:2] }), `messages[1]: tool-result: toolUse "call-1" is not answered`},
		{"a toolResult answering nothing", "", edit(func(r map[string]any) {
			m := msgs(r)[2].(map[string]any)
			m["content"] = append(m["content"].([]any), map[string]any{"toolResult": map[string]any{"toolUseId": "call-9", "content": []any{map[string]any{"text": "?"}}}})
		}), `tool-result: toolResult "call-9" answers no toolUse`},
		{"tool blocks without toolConfig", "", edit(func(r map[string]any) { delete(r, "toolConfig") }), "toolConfig: tool-config"},
		{"an input schema that is not an object type", "", edit(func(r map[string]any) {
			spec(r)["inputSchema"] = map[string]any{"json": map[string]any{"type": "string"}}
		}), `inputSchema.json.type: input-schema: the top-level type must be "object"`},
		{"properties that are not an object", "", edit(func(r map[string]any) {
			spec(r)["inputSchema"] = map[string]any{"json": map[string]any{"type": "object", "properties": []any{"to_agent"}}}
		}), "inputSchema.json.properties: input-schema: properties must be an object"},
		{"required naming no property", "", edit(func(r map[string]any) {
			spec(r)["inputSchema"].(map[string]any)["json"].(map[string]any)["required"] = []any{"title"}
		}), `input-schema: required names "title"`},
		{"a blank text block", "", edit(func(r map[string]any) { msgs(r)[0].(map[string]any)["content"] = []any{map[string]any{"text": " "}} }), "messages[0].content[0].text: blank-text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			modelID := tc.modelID
			if modelID == "" {
				modelID = "amazon.nova-micro-v1:0"
			}
			resp, out := post(t, s.URL, modelID, tc.body)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			assert.Equal(t, "ValidationException", resp.Header.Get("X-Amzn-ErrorType"))
			assert.Contains(t, out["message"], tc.want)
		})
	}
}

// The production adapter, through the real SDK, against the edge and the
// deterministic model: scripted failures are ModelErrorException (not
// retried), a timeout script holds the call until the caller gives up, and
// a malformed request is a ValidationException the SDK maps.
func TestBedrockAdapterAgainstTheEdge(t *testing.T) {
	m := &recording{}
	b, s := mustBedrockEdge(t, m)
	client := bedrockruntime.New(bedrockruntime.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	adapter := bedrock.Model{Client: client, DefaultModelID: "anthropic.claude-3-5-haiku-20241022-v1:0"}
	req := models.Request{System: "You are Kyra.", Messages: []models.Message{{Role: "user", Content: "What is 2+3?"}},
		Tools: []models.Tool{{Name: "search_memories", Description: "Search."}}, MaxTokens: 300}

	// The answer, as the local model gives it directly.
	want, err := localmodel.New(nil).Converse(context.Background(), req)
	require.NoError(t, err)
	m.resp = want
	got, err := adapter.Converse(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, want.Text, got.Text)
	assert.Equal(t, want.InputTokens, got.InputTokens)
	assert.Equal(t, "anthropic.claude-3-5-haiku-20241022-v1:0", got.ModelID)

	m.err = fmt.Errorf("%w: scripted failure", models.ErrModel)
	_, err = adapter.Converse(context.Background(), req)
	require.ErrorIs(t, err, models.ErrModel)
	assert.Contains(t, err.Error(), "ModelErrorException")
	assert.EqualValues(t, 1, b.Counts()["Converse.model_error"], "a model error is not retried")

	// A request the adapter would never send: the SDK maps the 400.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = client.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String("amazon.nova-micro-v1:0")})
	var api smithy.APIError
	require.ErrorAs(t, err, &api)
	assert.Equal(t, "ValidationException", api.ErrorCode())
	assert.Contains(t, api.ErrorMessage(), "at least one message")
	assert.EqualValues(t, 1, b.Counts()["Converse.invalid"])
}

// A timeout script blocks until the caller's context ends.
func TestBedrockTimeoutScriptHoldsUntilTheCallerGivesUp(t *testing.T) {
	_, s := mustBedrockEdge(t, blocking{})
	client := bedrockruntime.New(bedrockruntime.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	adapter := bedrock.Model{Client: client, DefaultModelID: "amazon.nova-micro-v1:0"}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := adapter.Converse(ctx, models.Request{Messages: []models.Message{{Role: "user", Content: "hi"}}})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)
}

type blocking struct{}

func (blocking) Converse(ctx context.Context, _ models.Request) (models.Response, error) {
	<-ctx.Done()
	return models.Response{}, ctx.Err()
}

// unitEmbedder embeds every text as the same 256-value unit vector.
type unitEmbedder struct{}

func (unitEmbedder) Embed(_ context.Context, texts []string) ([][]float64, error) {
	out := make([][]float64, len(texts))
	for i := range texts {
		v := make([]float64, 256)
		v[0], v[1] = 0.6, 0.8
		out[i] = v
	}
	return out, nil
}

// InvokeModel for Titan Text Embeddings V2: a valid body gets a vector of
// the dimensions asked; a malformed one Bedrock's ValidationException.
func TestBedrockTitanEmbeddings(t *testing.T) {
	b, s := mustBedrockEdge(t, &recording{})
	b.Embedder = func() (cloud.TextEmbedder, error) { return unitEmbedder{}, nil }
	client := bedrockruntime.New(bedrockruntime.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.URL), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	invoke := func(body string) (*bedrockruntime.InvokeModelOutput, error) {
		return client.InvokeModel(context.Background(), &bedrockruntime.InvokeModelInput{ModelId: aws.String(cloud.TitanEmbedModel),
			ContentType: aws.String("application/json"), Accept: aws.String("application/json"), Body: []byte(body)})
	}
	out, err := invoke(`{"inputText": "review my Go code", "dimensions": 512, "normalize": true}`)
	require.NoError(t, err)
	var got struct {
		Embedding           []float64 `json:"embedding"`
		InputTextTokenCount int       `json:"inputTextTokenCount"`
	}
	require.NoError(t, json.Unmarshal(out.Body, &got))
	require.Len(t, got.Embedding, 512)
	assert.InDelta(t, 0.8, got.Embedding[1], 1e-9)
	assert.Positive(t, got.InputTextTokenCount)

	for body, want := range map[string]string{
		`{"dimensions": 512}`:                     "required key [inputText]",
		`{"inputText": "x", "dimensions": 300}`:   "dimensions: titan: 300",
		`{"inputText": "x", "temperature": 1}`:    "unknown field",
		`{"inputText": "", "normalize": true}`:    "inputText: titan: length",
		`{"inputText": "x", "normalize": "true"}`: "Malformed input request",
	} {
		_, err := invoke(body)
		var api smithy.APIError
		require.ErrorAs(t, err, &api, body)
		assert.Equal(t, "ValidationException", api.ErrorCode(), body)
		assert.Contains(t, api.ErrorMessage(), want, body)
	}
	assert.Equal(t, map[string]int64{"InvokeModel": 1, "InvokeModel.invalid": 5}, b.Counts())
}

// edgeClient is the Bedrock runtime client of the SDK, on the edge at url.
func edgeClient(url string) *bedrockruntime.Client {
	return bedrockruntime.New(bedrockruntime.Options{Region: "us-east-1", BaseEndpoint: aws.String(url), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
}

// bothWays asks the adapter req through Converse, then with deltas through
// ConverseStream, checks that both give one response and returns it with
// the deltas; read, when set, is called after each delta is taken.
func bothWays(t *testing.T, adapter bedrock.Model, req models.Request, read func()) (models.Response, []string) {
	t.Helper()
	plain, err := adapter.Converse(context.Background(), req)
	require.NoError(t, err)
	var pieces []string
	req.OnDelta = func(s string) {
		pieces = append(pieces, s)
		if read != nil {
			read()
		}
	}
	resp, err := adapter.Converse(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, plain, resp, "ConverseStream gives what Converse gives")
	return resp, pieces
}

// The production adapter asking for deltas goes through ConverseStream and
// the edge's event stream: the deltas arrive over time, paced, and
// concatenate exactly to the text; the response is the one Converse gives
// for the same request.
func TestBedrockConverseStreamGivesWhatConverseGives(t *testing.T) {
	m := &recording{}
	b, s := mustBedrockEdge(t, m)
	// Each delta after the first is written only once the client has
	// read the one before it: a stream buffered to its end would never
	// deliver the first, and the test would time out below.
	read := make(chan struct{}, 64)
	b.StreamPace = func(r *http.Request, delta int) bool {
		select {
		case <-read:
			return true
		case <-time.After(10 * time.Second):
			return false
		case <-r.Context().Done():
			return false
		}
	}
	adapter := bedrock.Model{Client: edgeClient(s.URL), DefaultModelID: "anthropic.claude-3-5-haiku-20241022-v1:0"}
	req := models.Request{System: "You are Kyra.", Messages: []models.Message{{Role: "user", Content: "How do I fix a nil map panic in Go?"}},
		Tools: []models.Tool{{Name: "search_memories", Description: "Search."}}, MaxTokens: 300,
		Metadata: map[string]string{models.MetadataTeamID: "team_1"}}
	want, err := localmodel.New(nil).Converse(context.Background(), req)
	require.NoError(t, err)
	m.resp = want

	got, pieces := bothWays(t, adapter, req, func() { read <- struct{}{} })
	assert.Equal(t, want.Text, got.Text)
	assert.Equal(t, want.InputTokens, got.InputTokens)
	assert.Equal(t, want.OutputTokens, got.OutputTokens)
	assert.Equal(t, "anthropic.claude-3-5-haiku-20241022-v1:0", got.ModelID)
	assert.Equal(t, got.Text, strings.Join(pieces, ""), "the deltas are the text, whitespace and all")
	require.Greater(t, len(pieces), 3, "a reply of many words comes in several deltas")
	assert.Zero(t, b.Counts()["ConverseStream.abandoned"], "every delta was read before the next was written")
	assert.Equal(t, req.Metadata, m.got.Metadata, "the same request went to the model")
	assert.Equal(t, map[string]int64{"Converse": 1, "ConverseStream": 1}, b.Counts())
}

// Tool calls, refusals and answers without text stream as they answer
// through Converse: a tool call's id, name and input (as Converse renders
// it) from its contentBlockStart and delta, never as a text delta.
func TestBedrockConverseStreamToolUseAndStopReasons(t *testing.T) {
	m := &recording{}
	b, s := mustBedrockEdge(t, m)
	b.StreamChunkDelay = 0
	adapter := bedrock.Model{Client: edgeClient(s.URL), DefaultModelID: "amazon.nova-micro-v1:0"}
	req := models.Request{Messages: []models.Message{{Role: "user", Content: "Who can help with signups?"}},
		Tools: []models.Tool{{Name: "delegate_task", Description: "Delegate."}, {Name: "search_memories", Description: "Search."}}}
	for name, answer := range map[string]models.Response{
		"text and two tool calls": {Text: "Let me ask Dana.", InputTokens: 30, OutputTokens: 12, ToolCalls: []models.ToolCall{
			{ID: "call-1", Name: "delegate_task", Input: `{"to_agent": "dana", "budget": 1.50, "note": "<signups & churn>", "tags": ["a", "b"]}`},
			{ID: "call-2", Name: "search_memories", Input: ""}}},
		"a tool call alone": {InputTokens: 8, OutputTokens: 4, ToolCalls: []models.ToolCall{{ID: "call-3", Name: "delegate_task", Input: `{"to_agent":"luke"}`}}},
		"a refusal":         {Text: "I can't help with that.", Refused: true, InputTokens: 5, OutputTokens: 6},
		"no text":           {InputTokens: 5},
	} {
		t.Run(name, func(t *testing.T) {
			m.resp = answer
			got, pieces := bothWays(t, adapter, req, nil)
			assert.Equal(t, answer.Text, got.Text)
			assert.Equal(t, answer.Text, strings.Join(pieces, ""))
			assert.Equal(t, answer.Refused, got.Refused)
			require.Len(t, got.ToolCalls, len(answer.ToolCalls))
			for i, c := range answer.ToolCalls {
				assert.Equal(t, c.ID, got.ToolCalls[i].ID)
				assert.Equal(t, c.Name, got.ToolCalls[i].Name)
				if c.Input != "" {
					assert.JSONEq(t, c.Input, got.ToolCalls[i].Input)
				} else {
					assert.Equal(t, "{}", got.ToolCalls[i].Input)
				}
			}
		})
	}
}

// A malformed ConverseStream request gets the ValidationException Converse
// gets, before any event; a scripted failure Bedrock's ModelErrorException;
// a caller that goes away mid-stream stops the stream.
func TestBedrockConverseStreamFailures(t *testing.T) {
	m := &recording{}
	b, s := mustBedrockEdge(t, m)
	client := edgeClient(s.URL)
	adapter := bedrock.Model{Client: client, DefaultModelID: "amazon.nova-micro-v1:0"}

	_, err := client.ConverseStream(context.Background(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String("amazon.nova-micro-v1:0")})
	var api smithy.APIError
	require.ErrorAs(t, err, &api)
	assert.Equal(t, "ValidationException", api.ErrorCode())
	assert.Contains(t, api.ErrorMessage(), "at least one message")
	var pieces []string
	blank := models.Request{Messages: []models.Message{{Role: "user", Content: " "}}, OnDelta: func(s string) { pieces = append(pieces, s) }}
	_, err = adapter.Converse(context.Background(), blank)
	require.ErrorIs(t, err, models.ErrModel)
	assert.Contains(t, err.Error(), "ValidationException")
	assert.Contains(t, err.Error(), "blank-text")
	assert.EqualValues(t, 2, b.Counts()["ConverseStream.invalid"])

	ask := models.Request{Messages: []models.Message{{Role: "user", Content: "hi"}}, OnDelta: func(s string) { pieces = append(pieces, s) }}
	m.err = fmt.Errorf("%w: scripted failure", models.ErrModel)
	_, err = adapter.Converse(context.Background(), ask)
	require.ErrorIs(t, err, models.ErrModel)
	assert.Contains(t, err.Error(), "ModelErrorException")
	assert.EqualValues(t, 1, b.Counts()["ConverseStream.model_error"])
	assert.Empty(t, pieces)

	// The caller gives up after the first delta of a long, slow answer.
	m.err, m.resp = nil, models.Response{Text: strings.Repeat("word ", 300)}
	b.StreamChunkDelay = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ask.OnDelta = func(string) { cancel() }
	start := time.Now()
	_, err = adapter.Converse(ctx, ask)
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), 2*time.Second, "the adapter stops reading at once")
	require.Eventually(t, func() bool { return b.Counts()["ConverseStream.abandoned"] == 1 }, 5*time.Second, 10*time.Millisecond,
		"the edge stops writing to a caller that went away")
}

// A history that begins with the assistant (a result or an agent's message
// posted into a conversation before anyone wrote) is led in by a user turn:
// Bedrock refuses a first message that is not the user's, and the turn
// answered 502 (found by the contract test).
func TestAHistoryOpeningWithTheAssistantIsLedInByTheUser(t *testing.T) {
	m := &recording{resp: models.Response{Text: "Noted.", InputTokens: 9, OutputTokens: 2}}
	b, s := mustBedrockEdge(t, m)
	adapter := bedrock.Model{Client: edgeClient(s.URL), DefaultModelID: "amazon.nova-micro-v1:0"}
	resp, err := adapter.Converse(context.Background(), models.Request{Messages: []models.Message{
		{Role: "assistant", Content: "The report on signups is done."},
		{Role: "assistant", Content: "Dana posted her findings."},
		{Role: "user", Content: "Thanks, what did she find?"},
	}})
	require.NoError(t, err)
	assert.Equal(t, "Noted.", resp.Text)
	require.Len(t, m.got.Messages, 3, "the lead-in, the assistant's two turns merged, the user's")
	assert.Equal(t, "user", m.got.Messages[0].Role)
	assert.Equal(t, models.Message{Role: "assistant", Content: "The report on signups is done.Dana posted her findings."}, m.got.Messages[1])
	assert.Equal(t, models.Message{Role: "user", Content: "Thanks, what did she find?"}, m.got.Messages[2])
	assert.Equal(t, map[string]int64{"Converse": 1}, b.Counts())
}
