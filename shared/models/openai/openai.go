// Package openai is the models port's adapter for OpenAI-compatible chat
// completions endpoints (OpenAI, Azure OpenAI, vLLM, Ollama, LiteLLM, …),
// with tool calls, over plain HTTP.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/conclave-ai/conclave/shared/models"
)

// Model answers through an OpenAI-compatible chat completions endpoint.
type Model struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1.
	BaseURL string
	// APIKey is sent as a bearer token when set (local servers need none).
	APIKey string
	// DefaultModelID is used when a request names none.
	DefaultModelID string
	// ServedModelID, when set, is the model every call names, whatever
	// the request's: a local server (Ollama, llama.cpp, vLLM) serves the
	// models it has pulled or loaded, not the ids of the model tiers
	// (Bedrock's by default) or of an agent's configuration.
	ServedModelID string
	// HTTP is the client to call with (its timeout bounds a call);
	// http.DefaultClient when nil.
	HTTP *http.Client
}

var _ models.Model = Model{}

type oaiMessage struct {
	Role       string        `json:"role"`
	Content    *string       `json:"content"`
	ToolCalls  []oaiToolCall `json:"tool_calls,omitempty"`
	ToolCallID string        `json:"tool_call_id,omitempty"`
}

type oaiToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaiTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Parameters  map[string]any `json:"parameters"`
	} `json:"function"`
}

type oaiRequest struct {
	Model     string       `json:"model"`
	Messages  []oaiMessage `json:"messages"`
	Tools     []oaiTool    `json:"tools,omitempty"`
	MaxTokens int          `json:"max_tokens,omitempty"`
	// Stream asks for the answer as server-sent chunks (stream.go), with
	// the usage in the last one.
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type oaiResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message      oaiMessage `json:"message"`
		FinishReason string     `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

func strPtr(s string) *string { return &s }

// chatRequest maps a request to the chat completions body: the system
// prompt as the first message, tool calls as function calls.
func chatRequest(req models.Request, modelID string) oaiRequest {
	body := oaiRequest{Model: modelID, MaxTokens: req.MaxTokens}
	if req.System != "" {
		body.Messages = append(body.Messages, oaiMessage{Role: "system", Content: strPtr(req.System)})
	}
	for _, m := range req.Messages {
		om := oaiMessage{Role: m.Role, ToolCallID: m.ToolCallID}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			om.Content = strPtr(m.Content)
		}
		for _, c := range m.ToolCalls {
			tc := oaiToolCall{ID: c.ID, Type: "function"}
			tc.Function.Name, tc.Function.Arguments = c.Name, c.Input
			om.ToolCalls = append(om.ToolCalls, tc)
		}
		body.Messages = append(body.Messages, om)
	}
	for _, t := range req.Tools {
		ot := oaiTool{Type: "function"}
		ot.Function.Name, ot.Function.Description, ot.Function.Parameters = t.Name, t.Description, t.InputSchema()
		body.Tools = append(body.Tools, ot)
	}
	return body
}

// Converse implements models.Model. Provider failures are models.ErrModel
// with the HTTP status and the provider's message; a context's end is
// returned as it is. Request metadata is not sent: OpenAI accepts its
// metadata field only for stored completions, and compatible servers may
// reject fields they do not know.
//
// A request with OnDelta streams (stream: true, stream.go): OnDelta gets
// the text as the server sends it. A server that ignores the option and
// answers whole gets read as such, its text handed to OnDelta at once.
func (o Model) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	modelID := req.ModelID
	switch {
	case o.ServedModelID != "":
		modelID = o.ServedModelID
	case modelID == "":
		modelID = o.DefaultModelID
	}
	body := chatRequest(req, modelID)
	if req.OnDelta != nil {
		body.Stream, body.StreamOptions = true, &streamOptions{IncludeUsage: true}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return models.Response{}, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(o.BaseURL, "/")+"/chat/completions", bytes.NewReader(raw))
	if err != nil {
		return models.Response{}, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	if o.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	client := o.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	hres, err := client.Do(hreq)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return models.Response{}, err
		}
		return models.Response{}, fmt.Errorf("%w: openai: %v", models.ErrModel, err)
	}
	defer hres.Body.Close()
	if hres.StatusCode/100 == 2 && strings.HasPrefix(hres.Header.Get("Content-Type"), "text/event-stream") {
		return readStream(hres.Body, modelID, req)
	}
	data, err := io.ReadAll(io.LimitReader(hres.Body, 4<<20))
	if err != nil {
		return models.Response{}, fmt.Errorf("%w: openai: reading the response: %v", models.ErrModel, err)
	}
	var out oaiResponse
	jsonErr := json.Unmarshal(data, &out)
	if hres.StatusCode/100 != 2 {
		msg := strings.TrimSpace(string(data))
		if jsonErr == nil && out.Error != nil {
			msg = out.Error.Message
		}
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return models.Response{}, fmt.Errorf("%w: openai HTTP %d: %s", models.ErrModel, hres.StatusCode, msg)
	}
	if jsonErr != nil || len(out.Choices) == 0 {
		return models.Response{}, fmt.Errorf("%w: openai: malformed response", models.ErrModel)
	}
	ch := out.Choices[0]
	resp := models.Response{ModelID: modelID, InputTokens: out.Usage.PromptTokens, OutputTokens: out.Usage.CompletionTokens, Refused: ch.FinishReason == "content_filter"}
	if ch.Message.Content != nil {
		resp.Text = *ch.Message.Content
	}
	for _, c := range ch.Message.ToolCalls {
		resp.ToolCalls = append(resp.ToolCalls, models.ToolCall{ID: c.ID, Name: c.Function.Name, Input: c.Function.Arguments})
	}
	if req.OnDelta != nil && resp.Text != "" {
		req.OnDelta(resp.Text)
	}
	return resp, nil
}
