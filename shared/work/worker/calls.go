package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// runCalls runs the calls of one response in order; decisions (by call
// id) are the human's on the calls that waited for approval. It returns
// each call's answer and whether one waits for a delegated task. A call
// that adds a tool pack (AddPack) adds its tools to tools for the model's
// next step; a call that asked the model (a bridging tool) charges the
// attempt's tokens, and one that went over the token budget ends the
// attempt (BudgetExceeded) once its answer is recorded.
func (w *Worker) runCalls(ctx context.Context, p workflow.TaskInput, b workflow.Budgets, tools *[]models.Tool, tc *teamContext, calls []models.ToolCall, decisions map[string]workflow.ApprovalOutcome, res *workflow.TaskResult, record func(Usage, ...TrackEvent) error) ([]answer, bool, error) {
	answers := make([]answer, 0, len(calls))
	waiting := false
	offered := *tools
	for _, call := range calls {
		res.ToolCalls++
		if err := record(Usage{}, TrackEvent{Type: "tool_call", Payload: map[string]any{"tool": call.Name, "input": call.Input, "call": res.ToolCalls}}); err != nil {
			return nil, false, notRunnable(p, err)
		}
		if d, gated := decisions[call.ID]; gated {
			if d.Decision != workflow.DecisionApprove {
				out := rejection(d)
				if err := record(Usage{}, TrackEvent{Type: "tool_result", Payload: map[string]any{"tool": call.Name, "approval_id": d.ApprovalID, "decision": d.Decision, "output": clip.Clip(out, 500)}}); err != nil {
					return nil, false, notRunnable(p, err)
				}
				answers = append(answers, answer{CallID: call.ID, Tool: call.Name, Output: out})
				continue
			}
			if len(d.Arguments) > 0 {
				call.Input = string(d.Arguments)
			}
		}
		meter := NewMeter(b.MaxTokens - res.TokensUsed)
		out, wait, add, made := w.callTool(WithMeter(ctx, meter), p, offered, call)
		tokens, cost := meter.Charged()
		res.TokensUsed += tokens
		res.CostUSD += cost
		res.ResultArtifacts = workflow.AppendArtifacts(res.ResultArtifacts, made...)
		if wait != nil {
			answers = append(answers, answer{CallID: call.ID, Tool: call.Name, ChildTaskID: wait.ChildTaskID})
			waiting = true
			continue
		}
		if add != nil {
			out = add.Output
			if err := w.addPack(ctx, p, tools, tc, add.Pack, record); err != nil {
				return nil, false, err
			}
		}
		result := map[string]any{"tool": call.Name, "output": clip.Clip(out, 500)}
		if len(made) > 0 {
			result["artifacts"] = made
		}
		if err := record(Usage{}, TrackEvent{Type: "tool_result", Payload: result}); err != nil {
			return nil, false, notRunnable(p, err)
		}
		answers = append(answers, answer{CallID: call.ID, Tool: call.Name, Output: out})
		if res.TokensUsed > b.MaxTokens {
			return nil, false, workflow.BudgetExceeded{Msg: fmt.Sprintf("token budget exceeded: used %d of %d tokens (tool %s)", res.TokensUsed, b.MaxTokens, call.Name)}
		}
	}
	return answers, waiting, nil
}

// addPack offers pack's tools from the model's next step to the end of
// the task and records it on the task's timeline.
func (w *Worker) addPack(ctx context.Context, p workflow.TaskInput, tools *[]models.Tool, tc *teamContext, pack string, record func(Usage, ...TrackEvent) error) error {
	before := len(*tools)
	*tools = w.augment(ctx, p.TeamID, tc.agent, *tools, []string{pack})
	if !slices.Contains(tc.packs, pack) {
		tc.packs = append(tc.packs, pack)
	}
	added := []string{}
	for _, t := range (*tools)[before:] {
		added = append(added, t.Name)
	}
	if err := record(Usage{}, TrackEvent{Type: EvToolPackAdded, Payload: map[string]any{"pack": pack, "tools": added}}); err != nil {
		return notRunnable(p, err)
	}
	return nil
}

// callTool runs one tool call; an error the agent can read becomes the
// tool's output. A WaitFor ends the attempt and an AddPack augments it
// instead (returned apart). made are the ids of what the call created
// (Produced); a call that failed counts none.
func (w *Worker) callTool(ctx context.Context, p workflow.TaskInput, offered []models.Tool, call models.ToolCall) (out string, wait *WaitFor, add *AddPack, made []string) {
	if w.Tools == nil || !slices.ContainsFunc(offered, func(t models.Tool) bool { return t.Name == call.Name }) {
		// A model may name a tool it was not given (or one the flags
		// turned off): it is not run.
		return "tool " + call.Name + " is not available", nil, nil, nil
	}
	arts := &Artifacts{}
	out, err := w.Tools.Call(WithArtifacts(ctx, arts), p, call)
	var wf WaitFor
	if errors.As(err, &wf) {
		return "", &wf, nil, arts.IDs()
	}
	var ap AddPack
	if errors.As(err, &ap) {
		return "", nil, &ap, arts.IDs()
	}
	if err != nil {
		return "error: " + err.Error(), nil, nil, nil
	}
	return out, nil, nil, arts.IDs()
}

// Artifacts collects the ids of what one tool call created: a sub-task,
// a report, a memory, a message, a session, a consultation, a clipboard
// entry. The worker puts one around each call of a task (WithArtifacts);
// the ids of the calls that did not fail become the task's
// result_artifacts (workflow.TaskResult.ResultArtifacts). The tools tell
// it with Produced, as they tell a Meter what they spent.
type Artifacts struct{ ids []string }

type artifactsKey struct{}

// WithArtifacts returns ctx carrying a (the worker's, around one tool
// call).
func WithArtifacts(ctx context.Context, a *Artifacts) context.Context {
	return context.WithValue(ctx, artifactsKey{}, a)
}

// Produced records ids as created by the tool call running under ctx.
// Outside a task's call (a chat reply) nothing collects them and it does
// nothing.
func Produced(ctx context.Context, ids ...string) {
	if a, _ := ctx.Value(artifactsKey{}).(*Artifacts); a != nil {
		a.ids = append(a.ids, ids...)
	}
}

// IDs are the ids recorded, in order.
func (a *Artifacts) IDs() []string { return a.ids }
