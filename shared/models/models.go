// Package models is the one port through which agents answer (architecture
// decision 6). Adapters: the deterministic local model (make run and
// tests), Amazon Bedrock Converse (bedrock.go) and OpenAI-compatible
// endpoints (openai.go); Switch picks one per agent by provider. Every call
// reports token counts so budgets and costs are enforced on real numbers.
package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
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

// Request is one call.
type Request struct {
	ModelID   string
	System    string
	Messages  []Message
	Tools     []Tool
	MaxTokens int
	// Script drives the local model (see agents.Model.Script); other
	// adapters ignore it.
	Script string
	// Skills give the local model something to say in the agent's voice;
	// SkillNotes are their descriptions and Agent the agent's name.
	Skills     []string
	SkillNotes []string
	Agent      string
	// Provider picks the adapter in a Switch ("" is the default one).
	Provider string
}

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

// Local is the deterministic model for make run and tests: the same request
// always gets the same answer. Scripts make it misbehave on purpose:
//
//	fail       every call returns ErrModel
//	timeout    the call blocks until its context ends
//	tools:N    the first N calls ask for one tool each, then it answers
//	tokens:N   the answer reports N output tokens
//	delegate:S the first call delegates the task's instructions to agent S
//	           (delegate_task), then it answers with the result
//	refuse     the answer is a refusal (as a provider's content filter)
type Local struct{}

var _ Model = Local{}

// EstimateTokens approximates tokens as words × 4/3, the usual rule of thumb
// for English; the local model reports this so budgets behave realistically.
func EstimateTokens(s string) int {
	n := len(strings.Fields(s))
	return (n*4 + 2) / 3
}

// Converse implements Model.
func (Local) Converse(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	in := EstimateTokens(req.System)
	for _, m := range req.Messages {
		in += EstimateTokens(m.Content)
	}
	// The local model stands in for the agent's configured model and
	// reports its id, so costs and budgets behave as they would with it.
	resp := Response{InputTokens: in, ModelID: "local-deterministic"}
	if req.ModelID != "" {
		resp.ModelID = req.ModelID
	}
	kind, arg, _ := strings.Cut(req.Script, ":")
	n, _ := strconv.Atoi(arg)
	switch kind {
	case "fail":
		return Response{}, fmt.Errorf("%w: scripted failure", ErrModel)
	case "timeout":
		<-ctx.Done()
		return Response{}, ctx.Err()
	case "refuse":
		resp.Text, resp.Refused, resp.OutputTokens = "I can't help with that.", true, 6
		return resp, nil
	case "delegate":
		if toolResults(req) == 0 && hasTool(req, "delegate_task") {
			last := lastUser(req)
			input, _ := json.Marshal(map[string]any{"to_agent": arg, "title": "Help with: " + clip(last, 80), "instructions": last, "task_type": "research"})
			resp.ToolCalls = []ToolCall{{ID: "call-1", Name: "delegate_task", Input: string(input)}}
			resp.OutputTokens = 24
			return resp, nil
		}
		resp.Text = answer(req) + " Delegated work: " + lastTool(req)
		resp.OutputTokens = EstimateTokens(resp.Text)
		return resp, nil
	case "tools":
		calls := 0
		for _, m := range req.Messages {
			if m.Role == "tool" {
				calls++
			}
		}
		if calls < n && len(req.Tools) > 0 {
			t := req.Tools[calls%len(req.Tools)]
			resp.ToolCalls = []ToolCall{{ID: fmt.Sprintf("call-%d", calls+1), Name: t.Name, Input: "{}"}}
			resp.OutputTokens = 12
			return resp, nil
		}
	}
	resp.Text = answer(req)
	resp.OutputTokens = EstimateTokens(resp.Text)
	if kind == "tokens" {
		resp.OutputTokens = n
	}
	return resp, nil
}

func toolResults(req Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == "tool" {
			n++
		}
	}
	return n
}

func hasTool(req Request, name string) bool {
	for _, t := range req.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func lastUser(req Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return req.Messages[i].Content
		}
	}
	return ""
}

func lastTool(req Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "tool" {
			return req.Messages[i].Content
		}
	}
	return ""
}

func clip(s string, n int) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return string(r)
}

// answer composes a reply in the agent's voice from the last user message
// and the agent's skills; the opener is picked by a hash so the answer is
// stable for a given input. The closing sentence is the same for every
// agent, which is what an aggregator must deduplicate.
func answer(req Request) string {
	last := lastUser(req)
	h := fnv.New32a()
	h.Write([]byte(req.Agent + last))
	openers := []string{"Here is my take.", "Short answer first.", "Let me work through this."}
	var b strings.Builder
	b.WriteString(openers[int(h.Sum32())%len(openers)])
	skills := append([]string(nil), req.Skills...)
	sort.Strings(skills)
	switch {
	case req.Agent != "" && len(req.SkillNotes) > 0:
		fmt.Fprintf(&b, " As %s, on %s: %s.", req.Agent, strings.ReplaceAll(req.Skills[0], "-", " "), strings.TrimSuffix(lowerFirst(req.SkillNotes[0]), "."))
	case len(skills) > 0:
		fmt.Fprintf(&b, " Drawing on %s:", strings.Join(skills, ", "))
	}
	topic := strings.TrimSpace(last)
	if len(topic) > 160 {
		topic = topic[:160] + "…"
	}
	fmt.Fprintf(&b, " On %q: the key points are scope, risks and next steps.", topic)
	return b.String()
}

func lowerFirst(s string) string {
	r := []rune(s)
	if len(r) > 1 && r[0] >= 'A' && r[0] <= 'Z' && r[1] >= 'a' && r[1] <= 'z' {
		r[0] += 'a' - 'A'
	}
	return string(r)
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
