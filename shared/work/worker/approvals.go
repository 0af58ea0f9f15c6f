package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// approvedCalls is the response that waited for approvals: its calls and
// the decision on each gated one, by call id.
type approvedCalls struct {
	calls     []models.ToolCall
	decisions map[string]workflow.ApprovalOutcome
}

// rejection is what the model reads for a call a human rejected or nobody
// approved in time.
func rejection(d workflow.ApprovalOutcome) string {
	if d.Decision == workflow.DecisionExpire {
		return fmt.Sprintf("rejected: this call was not run; nobody approved it before approval %s expired. Go on without it, or say what you needed it for.", d.ApprovalID)
	}
	reason := d.Reason
	if reason == "" {
		reason = "no reason given"
	}
	return fmt.Sprintf("rejected by a human reviewer (approval %s): %s. This call was not run; do not repeat it as it was.", d.ApprovalID, reason)
}

// gate returns the calls of a response that need a human's approval: by
// the team's policy (read once per attempt, at the first response with
// calls) or a supports_hitl skill of the agent. A call the agent was not
// offered is not gated (it is not run either). An unreadable policy fails
// the attempt (the machine retries): a call is never run unapproved
// because the policy could not be read.
func (w *Worker) gate(ctx context.Context, p workflow.TaskInput, tc teamContext, offered []models.Tool, calls []models.ToolCall, policy **approvals.Policy) ([]workflow.ApprovalWait, error) {
	if w.Approvals == nil {
		return nil, nil
	}
	if *policy == nil {
		pol, err := w.Approvals.Policy(ctx, p.TeamID)
		if err != nil {
			return nil, err
		}
		*policy = &pol
	}
	var gated []workflow.ApprovalWait
	for _, call := range calls {
		if !slices.ContainsFunc(offered, func(t models.Tool) bool { return t.Name == call.Name }) {
			continue
		}
		cost := approvals.EstimatedCost(call.Name, tc.costCap)
		why := approvals.Required(**policy, tc.agent, call.Name, cost)
		if len(why) == 0 {
			continue
		}
		args := json.RawMessage(strings.TrimSpace(call.Input))
		if len(args) == 0 || !json.Valid(args) {
			args = json.RawMessage("{}")
		}
		gated = append(gated, workflow.ApprovalWait{ApprovalID: approvals.NewID(), CallID: call.ID, Tool: call.Name, Arguments: args,
			Agent: tc.agent.Slug, Reasons: why, EstimatedCostUSD: cost, TimeoutSeconds: (*policy).Expiry()})
	}
	return gated, nil
}

// awaitApprovals saves the conversation up to the response whose calls
// wait for approval and returns the wait: the machine blocks the task and
// resumes it with every decision.
func (w *Worker) awaitApprovals(res workflow.TaskResult, msgs []models.Message, calls []models.ToolCall, gated []workflow.ApprovalWait, rv review, tc teamContext, p workflow.TaskInput, record func(Usage, ...TrackEvent) error) (workflow.TaskResult, error) {
	pending := make([]pendingCall, len(calls))
	byCall := map[string]string{}
	evs := make([]TrackEvent, 0, len(gated))
	ids := make([]string, 0, len(gated))
	for _, g := range gated {
		byCall[g.CallID] = g.ApprovalID
		ids = append(ids, g.ApprovalID)
		evs = append(evs, TrackEvent{Type: "approval_requested", Payload: map[string]any{"tool": g.Tool, "approval_id": g.ApprovalID, "reasons": g.Reasons}})
	}
	for i, c := range calls {
		pending[i] = pendingCall{ID: c.ID, Name: c.Name, Input: c.Input, ApprovalID: byCall[c.ID]}
	}
	if err := record(Usage{}, evs...); err != nil {
		return res, notRunnable(p, err)
	}
	st, err := json.Marshal(savedState{Messages: msgs, Pending: pending, TokensUsed: res.TokensUsed, ToolCalls: res.ToolCalls, CostUSD: res.CostUSD, ModelID: res.ModelID, Review: rv, Team: tc.block, Packs: tc.packs,
		Artifacts: res.ResultArtifacts})
	if err != nil {
		return res, err
	}
	res.Waiting = &workflow.Waiting{Approvals: gated, ApprovalIDs: ids, State: st, TimeoutSeconds: workflow.MaxTaskSeconds}
	return res, nil
}

// holdChatCall is the first attempt of a task that continues a chat
// reply (workflow.TaskInput.HeldCall): the model's conversation is the
// task's instructions and the reply's call, which waits for its approval
// as any gated call does. The call must be one the agent has in a task
// (the chat's tools hold only those); one it has not is not run, and the
// resumed attempt answers it so.
func (w *Worker) holdChatCall(res workflow.TaskResult, req models.Request, h workflow.ApprovalWait, rv review, tc teamContext, p workflow.TaskInput, record func(Usage, ...TrackEvent) error) (workflow.TaskResult, error) {
	if h.ApprovalID == "" || h.CallID == "" || h.Tool == "" {
		return res, workflow.InvalidTask{Msg: "the held chat call has no approval, call id or tool"}
	}
	h.Agent = p.Assignee
	call := models.ToolCall{ID: h.CallID, Name: h.Tool, Input: string(h.Arguments)}
	msgs := append(req.Messages, models.Message{Role: "assistant", ToolCalls: []models.ToolCall{call}})
	return w.awaitApprovals(res, msgs, []models.ToolCall{call}, []workflow.ApprovalWait{h}, rv, tc, p, record)
}

// pendingCall is a call of a response that waited for approvals (with
// the approval that gates it, if any).
type pendingCall struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Input      string `json:"input,omitempty"`
	ApprovalID string `json:"approval_id,omitempty"`
}
