// Package models is the models wing and its port, the one interface through
// which agents answer (architecture decision 6): the request and response
// of a model call, the Model interface, prices and token estimates. It
// holds no adapter and links no provider client; the adapters live below
// it, each in its own package: bedrock (Amazon Bedrock Converse, the only
// package linking the Bedrock runtime client), openai (OpenAI-compatible
// HTTP endpoints) and localmodel (the deterministic model of the local
// cloud and the tests, a stage's choice like the others). Which adapter a
// function gets is wiring (shared/wire/providers). Switch picks one per
// request by provider. Every call reports token counts so budgets and
// costs are enforced on real numbers.
package models

import (
	"context"
	"errors"
	"strings"
	"unicode"
)

// Message is one turn of a conversation with the model.
type Message struct {
	Role    string // "user", "assistant" or "tool"
	Content string
	// ToolCalls are what an assistant turn asked for; ToolCallID links a
	// "tool" turn to its call. Providers need both to accept a tool result.
	ToolCalls  []ToolCall
	ToolCallID string
}

// Tool is a function the model may call. Schema is its JSON Schema input
// (an empty object schema when nil).
type Tool struct {
	Name        string
	Description string
	Schema      map[string]any
}

// InputSchema returns the tool's schema or the empty object schema.
func (t Tool) InputSchema() map[string]any {
	if t.Schema != nil {
		return t.Schema
	}
	return map[string]any{"type": "object", "properties": map[string]any{}}
}

// ToolCall is the model asking for a tool.
type ToolCall struct {
	ID    string
	Name  string
	Input string
}

// Request is one call. Everything an adapter needs to answer is here; what
// only one adapter uses does not belong in it (a provider-specific setting is
// the adapter's configuration, not the request's).
type Request struct {
	// ModelID names the provider's model; "" is the adapter's default.
	ModelID   string
	System    string
	Messages  []Message
	Tools     []Tool
	MaxTokens int
	// Provider picks the adapter in a Switch ("" is the default one).
	Provider string
	// Metadata is request metadata for attribution and tracing, with the
	// keys below (team, agent, conversation, session: the CostGuard
	// charges and attributes the call by them). It is never part of the
	// prompt: adapters hand it to providers that record it (Bedrock logs it
	// with the invocation) or ignore it, and the local model reads the
	// agent it names.
	Metadata map[string]string
	// OnDelta, when set, asks for the reply as it is written (a streamed
	// chat turn shows it to the reader word by word): the adapter streams
	// and calls OnDelta with each piece of the reply's text as the
	// provider produces it, in order, from the goroutine that called
	// Converse and before Converse returns. The pieces concatenate exactly
	// to Response.Text; none is empty. An adapter that cannot stream calls
	// it once with the whole text. Tool-use input is not text and is never
	// passed to it.
	// A request recorded as JSON leaves it out: a function is not data.
	OnDelta func(text string) `json:"-"`
}

// Keys of Request.Metadata.
const (
	// MetadataTeamID is the team the call is made for (costs, logs).
	MetadataTeamID = "team_id"
	// MetadataAgent is the slug of the agent answering; absent for a
	// call made for no agent (routing, planning, synthesis).
	MetadataAgent = "agent"
	// MetadataConversationID is the conversation the call serves, if any.
	MetadataConversationID = "conversation_id"
	// MetadataSessionID is the collaboration session the call serves, if
	// any.
	MetadataSessionID = "session_id"
	// MetadataUserID is the person whose work the call serves, if any:
	// the CostGuard charges it to their month (shared/team/budget), and
	// reads the request's caller (authctx.CallerOf) when it is absent.
	MetadataUserID = "user_id"
)

// Response is the model's answer.
type Response struct {
	Text         string
	ToolCalls    []ToolCall
	InputTokens  int
	OutputTokens int
	ModelID      string
	// Refused: the provider declined to answer (content filter, guardrail);
	// a CASCADE moves on to the next agent.
	Refused bool
}

// Model answers requests.
type Model interface {
	Converse(ctx context.Context, req Request) (Response, error)
}

// ErrModel is a model failure (provider error or scripted failure); callers
// treat it as retryable.
var ErrModel = errors.New("model error")

// ErrBudgetExhausted is a call the team's CostGuard refused before it was
// made (shared/team/budget): the team's monthly budget cannot hold its worst
// case. Not retryable; the error that wraps it is EREJECTED with reason
// TeamBudgetExhausted and the details a client sees.
var ErrBudgetExhausted = errors.New("the team's monthly budget is exhausted")

// EstimateTokens approximates tokens as words × 4/3, the usual rule of thumb
// for English; the local model reports this so budgets behave realistically.
func EstimateTokens(s string) int {
	n := len(strings.Fields(s))
	return (n*4 + 2) / 3
}

// Chunks splits text into pieces of n words (n < 1 is 1), each keeping the
// whitespace that follows its words, so the pieces concatenate exactly to
// text: how a stand-in for a streaming model (the local model, the local
// edge's Bedrock) hands out a reply it has whole. Empty text has none.
func Chunks(text string, n int) []string {
	n = max(n, 1)
	var out []string
	start, words, inWord := 0, 0, false
	for i, r := range text {
		space := unicode.IsSpace(r)
		if !space && !inWord {
			if words == n {
				out = append(out, text[start:i])
				start, words = i, 0
			}
			words++
		}
		inWord = !space
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// Switch sends each request to the adapter of its Provider, or Default.
type Switch struct {
	Default   Model
	Providers map[string]Model
}

// Converse implements Model.
func (s Switch) Converse(ctx context.Context, req Request) (Response, error) {
	if m, ok := s.Providers[req.Provider]; ok && req.Provider != "" {
		return m.Converse(ctx, req)
	}
	return s.Default.Converse(ctx, req)
}
