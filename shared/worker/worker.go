// Package worker runs one agent on one task through the model port, inside
// the task's budgets: tokens, tool calls and time. It is the body of the
// delegation state machine's task state; retries, timeouts and the
// dead-letter queue belong to the state machine, so the worker only reports
// failure by returning an error whose type name becomes the Step Functions
// error name.
package worker

import (
	"context"
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/models"
)

// Default and hard budgets of a task (the product's promises).
const (
	DefaultMaxTokens    = 4000
	DefaultMaxToolCalls = 10
	DefaultTimeout      = 120 // seconds
)

// Budgets limit one task.
type Budgets struct {
	MaxTokens      int `json:"max_tokens"`
	MaxToolCalls   int `json:"max_tool_calls"`
	TimeoutSeconds int `json:"timeout_seconds"`
}

// Payload is the task as the state machine hands it over.
type Payload struct {
	TeamID         string  `json:"team_id"`
	TaskID         string  `json:"task_id"`
	Assignee       string  `json:"assignee"`
	Title          string  `json:"title"`
	Instructions   string  `json:"instructions"`
	Context        string  `json:"context,omitempty"`
	ExpectedOutput string  `json:"expected_output,omitempty"`
	Budgets        Budgets `json:"budgets"`
}

// Result is what the worker returns to the state machine.
type Result struct {
	TaskID     string  `json:"task_id"`
	Output     string  `json:"output"`
	TokensUsed int     `json:"tokens_used"`
	ToolCalls  int     `json:"tool_calls"`
	CostUSD    float64 `json:"cost_usd"`
	ModelID    string  `json:"model_id"`
}

// The error types below are matched by name in statemachines/*.asl.json
// (aws-lambda-go reports an error's Go type name as its errorType).

// BudgetExceeded stops a task at its token or tool-call limit. Retrying
// cannot help, so the state machine does not retry it.
type BudgetExceeded struct{ Msg string }

func (e BudgetExceeded) Error() string { return e.Msg }

// InvalidTask is a payload that cannot run (unknown or inactive assignee,
// missing fields). Not retried either.
type InvalidTask struct{ Msg string }

func (e InvalidTask) Error() string { return e.Msg }

// ModelFailed is a model or provider failure; the state machine retries it.
type ModelFailed struct{ Msg string }

func (e ModelFailed) Error() string { return e.Msg }

// AgentReader is what the worker needs from the agent store.
type AgentReader interface {
	GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error)
}

// Tools executes the collaboration tools an agent may call. Nil means the
// agent has no tools yet; calls then get a "not available" result.
type Tools interface {
	Specs() []models.Tool
	Call(ctx context.Context, p Payload, call models.ToolCall) (string, error)
}

// Worker runs tasks.
type Worker struct {
	Agents AgentReader
	Model  models.Model
	Tools  Tools
}

// Run executes p. Returns InvalidTask, BudgetExceeded, ModelFailed, or the
// context's error when the deadline passes.
func (w *Worker) Run(ctx context.Context, p Payload) (Result, error) {
	b := p.Budgets
	if b.MaxTokens <= 0 || b.MaxTokens > DefaultMaxTokens {
		b.MaxTokens = DefaultMaxTokens
	}
	// Zero means "not set" (the field was omitted): the default applies.
	if b.MaxToolCalls <= 0 || b.MaxToolCalls > DefaultMaxToolCalls {
		b.MaxToolCalls = DefaultMaxToolCalls
	}
	if p.TeamID == "" || p.TaskID == "" || p.Assignee == "" || strings.TrimSpace(p.Instructions) == "" {
		return Result{}, InvalidTask{"team_id, task_id, assignee and instructions are required"}
	}
	a, err := w.Agents.GetAgent(ctx, p.TeamID, p.Assignee)
	if apperr.Is(err, apperr.ENOTFOUND) {
		return Result{}, InvalidTask{fmt.Sprintf("agent %q not found", p.Assignee)}
	}
	if err != nil {
		return Result{}, err
	}
	if a.Status != agents.StatusActive {
		return Result{}, InvalidTask{fmt.Sprintf("agent %q is %s", p.Assignee, a.Status)}
	}
	req := models.Request{System: systemPrompt(a, p), MaxTokens: b.MaxTokens, Messages: []models.Message{{Role: "user", Content: p.Instructions}}}
	if a.Model != nil {
		req.ModelID, req.Script = a.Model.ID, a.Model.Script
	}
	for _, s := range a.Skills {
		req.Skills = append(req.Skills, s.Name)
	}
	if w.Tools != nil {
		req.Tools = w.Tools.Specs()
	}
	res := Result{TaskID: p.TaskID}
	for {
		resp, err := w.Model.Converse(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return res, ModelFailed{err.Error()}
		}
		res.ModelID = resp.ModelID
		res.TokensUsed += resp.InputTokens + resp.OutputTokens
		res.CostUSD += models.Cost(resp.ModelID, resp.InputTokens, resp.OutputTokens)
		if res.TokensUsed > b.MaxTokens {
			return res, BudgetExceeded{fmt.Sprintf("token budget exceeded: used %d of %d tokens", res.TokensUsed, b.MaxTokens)}
		}
		if len(resp.ToolCalls) == 0 {
			res.Output = resp.Text
			return res, nil
		}
		for _, call := range resp.ToolCalls {
			if res.ToolCalls+1 > b.MaxToolCalls {
				return res, BudgetExceeded{fmt.Sprintf("tool call budget exceeded: the agent asked for more than %d tool calls", b.MaxToolCalls)}
			}
			res.ToolCalls++
			out := "tool " + call.Name + " is not available"
			if w.Tools != nil {
				if out, err = w.Tools.Call(ctx, p, call); err != nil {
					out = "error: " + err.Error()
				}
			}
			req.Messages = append(req.Messages, models.Message{Role: "assistant", Content: "calling " + call.Name}, models.Message{Role: "tool", Content: out})
		}
	}
}

func systemPrompt(a agents.Agent, p Payload) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are %s (@%s), %s.\n%s\n", a.Name, a.Slug, a.Tagline, a.Personality.Description)
	fmt.Fprintf(&b, "Task: %s\n", p.Title)
	if p.Context != "" {
		fmt.Fprintf(&b, "Context: %s\n", p.Context)
	}
	if p.ExpectedOutput != "" {
		fmt.Fprintf(&b, "Expected output: %s\n", p.ExpectedOutput)
	}
	return b.String()
}
