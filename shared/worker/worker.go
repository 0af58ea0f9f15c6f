// Package worker runs one agent on one task through the model port, inside
// the task's budgets: tokens, tool calls and time. It is the body of the
// delegation state machine's task state; retries, timeouts and the
// dead-letter queue belong to the state machine, so the worker only reports
// failure by returning an error whose type name becomes the Step Functions
// error name.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/logctx"
	"github.com/conclave-ai/conclave/shared/memory"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/prompts"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// ErrNotRunnable is what a Tracker returns when the task is no longer
// running.
var ErrNotRunnable = errors.New("task is not running")

// Usage is what one attempt consumed.
type Usage struct {
	Tokens    int
	ToolCalls int
	CostUSD   float64
}

// TrackEvent is one entry for the task's timeline.
type TrackEvent struct {
	Type    string
	Payload map[string]any
}

// Tracker connects the worker to the task record: Begin checks the task is
// running and returns its deadline; Record appends timeline events and adds
// usage. Both return ErrNotRunnable once the task was canceled, which stops
// the worker at its next step (cooperative cancellation).
type Tracker interface {
	Begin(ctx context.Context, p workflow.TaskInput) (deadline time.Time, err error)
	Record(ctx context.Context, p workflow.TaskInput, u Usage, events ...TrackEvent) error
	// StillRunning is polled during the attempt so a cancel stops a model
	// call that is under way, not only the next step.
	StillRunning(ctx context.Context, p workflow.TaskInput) (bool, error)
}

// WatchInterval is how often a running attempt checks for cancellation.
const WatchInterval = time.Second

var errStopped = errors.New("task stopped while running")

// AgentReader is what the worker needs from the agent store.
type AgentReader interface {
	GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error)
}

// Tools executes the collaboration tools an agent may call. Nil means the
// agent has no tools yet; calls then get a "not available" result.
type Tools interface {
	// Specs are the tools agent a may call (the stage's flags, its
	// declared tools); the worker runs no other.
	Specs(a agents.Agent) []models.Tool
	Call(ctx context.Context, p workflow.TaskInput, call models.ToolCall) (string, error)
}

// Brief is what the agent is told about its task beyond what the delegation
// machine's payload carries (kept small: the payload travels through every
// state): the task record's type, priority and input artifacts, and the
// last messages of the conversation the task came from.
type Brief struct {
	Type           string
	Priority       string
	InputArtifacts []string
	Conversation   []prompts.Line
}

// Briefs reads a task's brief at the start of each attempt. An error is
// the attempt's (a read of the task's own record: the machine retries).
type Briefs interface {
	Brief(ctx context.Context, p workflow.TaskInput) (Brief, error)
}

// Memories gives the agent its memory context, as a chat reply gets it
// (memory.Service).
type Memories interface {
	ForAgent(ctx context.Context, teamID, agent string) (memory.Context, error)
}

// Worker runs tasks.
type Worker struct {
	Agents  AgentReader
	Model   models.Model
	Tools   Tools
	Tracker Tracker // nil: run without a task record (unit tests)
	// Briefs adds the task record's fields and its conversation to the
	// prompt; nil: the payload alone.
	Briefs Briefs
	// Memories adds the agent's memory context to the prompt; nil: none.
	// A context that cannot be read is left out (and noted on the task's
	// timeline): the task still runs.
	Memories Memories
	Log      *slog.Logger
	// Tiers maps a task's model tier to the model asked when the agent
	// names none of its own (MODEL_TIERS); nil or a missing tier leaves
	// the provider's default.
	Tiers map[string]string
	// Reviewer holds a report task's answer to its template; nil accepts
	// every answer as it is.
	Reviewer Reviewer
}

// Run executes p inside the task's deadline and records the attempt on the
// task: its start, every tool call and result, and what it consumed.
// Returns InvalidTask, BudgetExceeded, ModelFailed, TaskTimedOut or
// TaskNotRunnable; their type names are the state machine's error names.
func (w *Worker) Run(ctx context.Context, p workflow.TaskInput) (workflow.TaskResult, error) {
	ctx = logctx.With(ctx, "team_id", p.TeamID, "task_id", p.TaskID, "step", "run")
	if w.Tracker == nil {
		return w.run(ctx, p, nopRecord)
	}
	deadline, err := w.Tracker.Begin(ctx, p)
	if errors.Is(err, ErrNotRunnable) {
		return workflow.TaskResult{}, workflow.TaskNotRunnable{Msg: "task " + p.TaskID + " is no longer running"}
	}
	if err != nil {
		return workflow.TaskResult{}, err
	}
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go w.watch(ctx, p, stop)
	record := func(u Usage, evs ...TrackEvent) error {
		// Recording must outlive the task's deadline: the attempt's usage
		// is written even when the deadline is what ended it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return w.Tracker.Record(rctx, p, u, evs...)
	}
	started := map[string]any{"message": "attempt started"}
	if p.Resume != nil {
		started["resumed"] = true
	}
	if err := record(Usage{}, TrackEvent{Type: "progress", Payload: started}); err != nil {
		return workflow.TaskResult{}, notRunnable(p, err)
	}
	res, runErr := w.run(ctx, p, record)
	if res.Waiting != nil && !deadline.IsZero() {
		res.Waiting.TimeoutSeconds = max(1, int(math.Ceil(time.Until(deadline).Seconds())))
	}
	if runErr != nil && errors.Is(context.Cause(ctx), errStopped) {
		return res, workflow.TaskNotRunnable{Msg: "task " + p.TaskID + " was canceled or reassigned while running"}
	}
	if runErr != nil && ctx.Err() == context.DeadlineExceeded && !deadline.IsZero() && !time.Now().Before(deadline) {
		runErr = workflow.TaskTimedOut{Msg: fmt.Sprintf("task timed out after %ds", p.Budgets.TimeoutSeconds)}
	}
	summary := map[string]any{"message": "attempt finished", "tokens_used": res.TokensUsed, "tool_calls": res.ToolCalls, "cost_usd": res.CostUSD}
	if res.Waiting != nil {
		summary["message"], summary["waiting_for"] = "attempt waiting for a delegated task", res.Waiting.ChildTaskID
	}
	if runErr != nil {
		summary["message"], summary["error"] = "attempt failed", runErr.Error()
		summary["error_type"] = fmt.Sprintf("%T", runErr)
	}
	// A resumed attempt's result carries the usage of the attempts before
	// it (the budgets span them); only this attempt's share is added.
	prior := resumedUsage(p)
	used := Usage{Tokens: max(0, res.TokensUsed-prior.Tokens), ToolCalls: max(0, res.ToolCalls-prior.ToolCalls), CostUSD: max(0, res.CostUSD-prior.CostUSD)}
	if err := record(used, TrackEvent{Type: "progress", Payload: summary}); err != nil && runErr == nil {
		if res.Waiting != nil && !errors.Is(err, ErrNotRunnable) {
			// The child already exists: failing here would make the
			// machine retry the attempt and the model delegate again. This
			// attempt's usage stays in the saved state, which the resumed
			// attempt's budgets count; only its record on the task is lost.
			return res, nil
		}
		return res, notRunnable(p, err)
	}
	return res, runErr
}

func (w *Worker) log() *slog.Logger {
	if w.Log != nil {
		return w.Log
	}
	return slog.Default()
}

// watch cancels the attempt once the task is no longer running.
func (w *Worker) watch(ctx context.Context, p workflow.TaskInput, stop context.CancelCauseFunc) {
	t := time.NewTicker(WatchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if ok, err := w.Tracker.StillRunning(ctx, p); err == nil && !ok {
				stop(errStopped)
				return
			}
		}
	}
}

func notRunnable(p workflow.TaskInput, err error) error {
	if errors.Is(err, ErrNotRunnable) {
		return workflow.TaskNotRunnable{Msg: "task " + p.TaskID + " is no longer running"}
	}
	return err
}

func nopRecord(Usage, ...TrackEvent) error { return nil }

func (w *Worker) run(ctx context.Context, p workflow.TaskInput, record func(Usage, ...TrackEvent) error) (workflow.TaskResult, error) {
	b := p.Budgets
	if b.MaxTokens <= 0 || b.MaxTokens > workflow.MaxTaskTokens {
		b.MaxTokens = workflow.MaxTaskTokens
	}
	// Zero means "not set" (the field was omitted): the default applies.
	if b.MaxToolCalls <= 0 || b.MaxToolCalls > workflow.MaxTaskToolCalls {
		b.MaxToolCalls = workflow.MaxTaskToolCalls
	}
	req, res, rv, err := w.prepare(ctx, p, b, record)
	if err != nil {
		return res, err
	}
	for {
		resp, err := w.Model.Converse(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return res, workflow.ModelFailed{Msg: err.Error()}
		}
		res.ModelID = resp.ModelID
		res.TokensUsed += resp.InputTokens + resp.OutputTokens
		res.CostUSD += models.Cost(resp.ModelID, resp.InputTokens, resp.OutputTokens)
		if res.TokensUsed > b.MaxTokens {
			return res, workflow.BudgetExceeded{Msg: fmt.Sprintf("token budget exceeded: used %d of %d tokens", res.TokensUsed, b.MaxTokens)}
		}
		if len(resp.ToolCalls) == 0 {
			rev, out := w.reviewAnswer(p, &rv, resp.Text)
			if rev == nil {
				res.Output = out
				return res, nil
			}
			payload := map[string]any{"missing_sections": rev.Missing, "invalid_sections": rev.Invalid}
			if err := record(Usage{}, TrackEvent{Type: "revision_requested", Payload: payload}); err != nil {
				return res, notRunnable(p, err)
			}
			req.Messages = append(req.Messages, models.Message{Role: "assistant", Content: resp.Text}, models.Message{Role: "user", Content: rev.Prompt})
			continue
		}
		for _, call := range resp.ToolCalls {
			if res.ToolCalls+1 > b.MaxToolCalls {
				return res, workflow.BudgetExceeded{Msg: fmt.Sprintf("tool call budget exceeded: the agent asked for more than %d tool calls", b.MaxToolCalls)}
			}
			res.ToolCalls++
			if err := record(Usage{}, TrackEvent{Type: "tool_call", Payload: map[string]any{"tool": call.Name, "input": call.Input, "call": res.ToolCalls}}); err != nil {
				return res, notRunnable(p, err)
			}
			out, wait := w.callTool(ctx, p, req.Tools, call)
			req.Messages = append(req.Messages, models.Message{Role: "assistant", ToolCalls: []models.ToolCall{call}})
			if wait != nil {
				// The rest of this response's calls are not run: the model
				// sees the delegated result first and may ask again.
				return suspend(res, req.Messages, call.ID, wait.ChildTaskID, rv)
			}
			if err := record(Usage{}, TrackEvent{Type: "tool_result", Payload: map[string]any{"tool": call.Name, "output": truncate(out, 500)}}); err != nil {
				return res, notRunnable(p, err)
			}
			req.Messages = append(req.Messages, models.Message{Role: "tool", Content: out, ToolCallID: call.ID})
		}
	}
}

// prepare checks the payload and the agent and returns the model request
// and the result so far: a fresh conversation, or the one a resumed
// attempt saved with the delegated result appended as its tool's answer.
func (w *Worker) prepare(ctx context.Context, p workflow.TaskInput, b workflow.Budgets, record func(Usage, ...TrackEvent) error) (models.Request, workflow.TaskResult, review, error) {
	res := workflow.TaskResult{TaskID: p.TaskID}
	if p.TeamID == "" || p.TaskID == "" || p.Assignee == "" || strings.TrimSpace(p.Instructions) == "" {
		return models.Request{}, res, review{}, workflow.InvalidTask{Msg: "team_id, task_id, assignee and instructions are required"}
	}
	a, err := w.Agents.GetAgent(ctx, p.TeamID, p.Assignee)
	if apperr.Is(err, apperr.ENOTFOUND) {
		return models.Request{}, res, review{}, workflow.InvalidTask{Msg: fmt.Sprintf("agent %q not found", p.Assignee)}
	}
	if err != nil {
		return models.Request{}, res, review{}, err
	}
	if a.Status != agents.StatusActive {
		return models.Request{}, res, review{}, workflow.InvalidTask{Msg: fmt.Sprintf("agent %q is %s", p.Assignee, a.Status)}
	}
	task := prompts.Task{Title: p.Title, Context: p.Context, ExpectedOutput: p.ExpectedOutput}
	if w.Briefs != nil {
		br, err := w.Briefs.Brief(ctx, p)
		if apperr.Is(err, apperr.ENOTFOUND) {
			return models.Request{}, res, review{}, workflow.InvalidTask{Msg: "task " + p.TaskID + " not found"}
		}
		if err != nil {
			return models.Request{}, res, review{}, err
		}
		task.Type, task.Priority, task.InputArtifacts, task.Conversation = br.Type, br.Priority, br.InputArtifacts, br.Conversation
	}
	system := prompts.System(a, task)
	if w.Memories != nil {
		mc, err := w.Memories.ForAgent(ctx, p.TeamID, a.Slug)
		if err != nil {
			w.log().WarnContext(ctx, "memory context unavailable; the task runs without it", "agent", a.Slug, "error", err.Error())
			if rerr := record(Usage{}, TrackEvent{Type: "progress", Payload: map[string]any{"message": "memory context unavailable; working without it"}}); rerr != nil {
				return models.Request{}, res, review{}, notRunnable(p, rerr)
			}
		} else {
			system += prompts.Memories(mc)
		}
	}
	// The task's tier picks the model unless the agent names its own.
	req := prompts.Request(p.TeamID, a, system, b.MaxTokens, w.Tiers[p.ModelTier])
	if w.Tools != nil {
		req.Tools = w.Tools.Specs(a)
	}
	if p.Resume == nil {
		req.Messages = []models.Message{{Role: "user", Content: p.Instructions}}
		return req, res, review{}, nil
	}
	var st savedState
	if err := json.Unmarshal(p.Resume.State, &st); err != nil || st.CallID == "" {
		return models.Request{}, res, review{}, workflow.InvalidTask{Msg: "the resumed attempt's saved state is unreadable"}
	}
	res.TokensUsed, res.ToolCalls, res.CostUSD, res.ModelID = st.TokensUsed, st.ToolCalls, st.CostUSD, st.ModelID
	out := p.Resume.Child.Summary
	if err := record(Usage{}, TrackEvent{Type: "tool_result", Payload: map[string]any{"tool": "delegate_task", "output": truncate(out, 500)}}); err != nil {
		return models.Request{}, res, review{}, notRunnable(p, err)
	}
	req.Messages = append(st.Messages, models.Message{Role: "tool", Content: out, ToolCallID: st.CallID})
	return req, res, st.Review, nil
}

// callTool runs one tool call; an error the agent can read becomes the
// tool's output. A WaitFor ends the attempt instead (returned apart).
func (w *Worker) callTool(ctx context.Context, p workflow.TaskInput, offered []models.Tool, call models.ToolCall) (string, *WaitFor) {
	if w.Tools == nil || !slices.ContainsFunc(offered, func(t models.Tool) bool { return t.Name == call.Name }) {
		// A model may name a tool it was not given (or one the flags
		// turned off): it is not run.
		return "tool " + call.Name + " is not available", nil
	}
	out, err := w.Tools.Call(ctx, p, call)
	var wait WaitFor
	if errors.As(err, &wait) {
		return "", &wait
	}
	if err != nil {
		return "error: " + err.Error(), nil
	}
	return out, nil
}

// WaitFor is what a tool returns to stop the attempt until a task it
// delegated has ended: the worker saves its conversation and returns
// workflow.TaskResult.Waiting, the delegation machine waits for the child
// without anything running, and the worker resumes with the child's
// outcome as the tool's result.
type WaitFor struct{ ChildTaskID string }

func (e WaitFor) Error() string { return "waiting for task " + e.ChildTaskID }

// savedState is the worker's part of workflow.Waiting.State and
// workflow.Resume.State: the conversation up to the waiting call and the
// usage so far, which the task's budgets keep counting.
type savedState struct {
	Messages   []models.Message `json:"messages"`
	CallID     string           `json:"call_id"`
	TokensUsed int              `json:"tokens_used"`
	ToolCalls  int              `json:"tool_calls"`
	CostUSD    float64          `json:"cost_usd"`
	ModelID    string           `json:"model_id"`
	// Review is a report's revision state: a revision asked before the
	// wait is not asked again.
	Review review `json:"review,omitzero"`
}

func suspend(res workflow.TaskResult, msgs []models.Message, callID, childID string, rv review) (workflow.TaskResult, error) {
	st, err := json.Marshal(savedState{Messages: msgs, CallID: callID, TokensUsed: res.TokensUsed, ToolCalls: res.ToolCalls, CostUSD: res.CostUSD, ModelID: res.ModelID, Review: rv})
	if err != nil {
		return res, err
	}
	// Without a deadline (no task record) the wait is the task's budget.
	res.Waiting = &workflow.Waiting{ChildTaskID: childID, State: st, TimeoutSeconds: workflow.MaxTaskSeconds}
	return res, nil
}

// resumedUsage is the usage a resumed attempt's saved state carries.
func resumedUsage(p workflow.TaskInput) Usage {
	var st savedState
	if p.Resume == nil || json.Unmarshal(p.Resume.State, &st) != nil {
		return Usage{}
	}
	return Usage{Tokens: st.TokensUsed, ToolCalls: st.ToolCalls, CostUSD: st.CostUSD}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
