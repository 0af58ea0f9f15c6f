package worker

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// WaitFor is what a tool returns to stop the attempt until a task it
// delegated has ended: the worker runs the response's other calls, saves
// its conversation and returns workflow.TaskResult.Waiting with every
// child waited for, the delegation machine waits for all of them without
// anything running, and the worker resumes once, when the last has ended,
// with each child's outcome as its own call's result.
type WaitFor struct{ ChildTaskID string }

func (e WaitFor) Error() string { return "waiting for task " + e.ChildTaskID }

// answer is one tool call of the response that waits: its result now, or
// the child whose outcome answers it when the attempt resumes.
type answer struct {
	CallID      string `json:"call_id"`
	Tool        string `json:"tool,omitempty"`
	Output      string `json:"output,omitempty"`
	ChildTaskID string `json:"child_task_id,omitempty"`
}

// savedState is the worker's part of workflow.Waiting.State and
// workflow.Resume.State: the conversation up to the response that waits,
// that response's calls and the answers it has so far, and the usage so
// far, which the task's budgets keep counting.
type savedState struct {
	Messages []models.Message `json:"messages"`
	// Answers are the waiting response's calls, in order (the messages
	// end with the assistant turn that made them).
	Answers []answer `json:"answers,omitempty"`
	// Pending are the calls of a response that waits for approvals (the
	// messages end with the assistant turn that made them); set instead
	// of Answers.
	Pending []pendingCall `json:"pending,omitempty"`
	// CallID is the one waiting call of a state saved before fan-out
	// (its messages end with that call alone).
	CallID     string  `json:"call_id,omitempty"`
	TokensUsed int     `json:"tokens_used"`
	ToolCalls  int     `json:"tool_calls"`
	CostUSD    float64 `json:"cost_usd"`
	ModelID    string  `json:"model_id"`
	// Review is a report's revision state: a revision asked before the
	// wait is not asked again.
	Review review `json:"review,omitzero"`
	// Team is the first attempt's team block (roster and inbox summary),
	// told again to the resumed attempt: at most prompts.TeamBudget
	// tokens, about 2 KB of the payload.
	Team string `json:"team,omitempty"`
	// Packs are the tool packs the task runs with: its own and the ones
	// request_tool_pack added, which the resumed attempt offers again.
	Packs []string `json:"packs,omitempty"`
	// Artifacts are the ids of what the attempts so far created
	// (workflow.TaskResult.ResultArtifacts): the resumed attempt adds to
	// them, so the task completes with every one.
	Artifacts []string `json:"artifacts,omitempty"`
}

// answers are the saved calls, a pre-fan-out state's one call included.
func (st savedState) answers(r *workflow.Resume) []answer {
	if len(st.Answers) > 0 || st.CallID == "" {
		return st.Answers
	}
	return []answer{{CallID: st.CallID, Tool: "delegate_task", ChildTaskID: r.Child.TaskID}}
}

// resumeAnswers fills each waiting call with its own child's outcome,
// matched by task id. A child whose outcome did not come (an execution of
// the single-child definition waits for the first only) is answered with
// where to look.
func resumeAnswers(saved []answer, outcomes []workflow.ChildOutcome) []answer {
	byID := make(map[string]string, len(outcomes))
	for _, o := range outcomes {
		byID[o.TaskID] = o.Summary
	}
	out := slices.Clone(saved)
	for i, a := range out {
		if a.ChildTaskID == "" {
			continue
		}
		if sum, ok := byID[a.ChildTaskID]; ok {
			out[i].Output = sum
		} else {
			out[i].Output = fmt.Sprintf("task %s's outcome did not arrive with the others; check it with check_task_status", a.ChildTaskID)
		}
	}
	return out
}

// appendAnswers answers each call of the last assistant turn with its
// result, in the order of the calls (ids matched: the model's toolUse ids).
func appendAnswers(msgs []models.Message, answers []answer) []models.Message {
	for _, a := range answers {
		msgs = append(msgs, models.Message{Role: "tool", Content: a.Output, ToolCallID: a.CallID})
	}
	return msgs
}

func suspend(res workflow.TaskResult, msgs []models.Message, answers []answer, rv review, tc teamContext) (workflow.TaskResult, error) {
	st, err := json.Marshal(savedState{Messages: msgs, Answers: answers, TokensUsed: res.TokensUsed, ToolCalls: res.ToolCalls, CostUSD: res.CostUSD, ModelID: res.ModelID, Review: rv, Team: tc.block, Packs: tc.packs,
		Artifacts: res.ResultArtifacts})
	if err != nil {
		return res, err
	}
	var children []string
	for _, a := range answers {
		if a.ChildTaskID != "" {
			children = append(children, a.ChildTaskID)
		}
	}
	// Without a deadline (no task record) the wait is the task's budget.
	res.Waiting = &workflow.Waiting{ChildTaskIDs: children, ChildTaskID: children[0], State: st, TimeoutSeconds: workflow.MaxTaskSeconds}
	return res, nil
}

// resumedCalls pairs the saved calls with the decisions on them. A gated
// call whose decision did not arrive is treated as expired: it never runs
// unapproved.
func resumedCalls(pending []pendingCall, outcomes []workflow.ApprovalOutcome) *approvedCalls {
	byApproval := make(map[string]workflow.ApprovalOutcome, len(outcomes))
	for _, o := range outcomes {
		byApproval[o.ApprovalID] = o
	}
	r := &approvedCalls{decisions: map[string]workflow.ApprovalOutcome{}}
	for _, c := range pending {
		r.calls = append(r.calls, models.ToolCall{ID: c.ID, Name: c.Name, Input: c.Input})
		if c.ApprovalID == "" {
			continue
		}
		d, ok := byApproval[c.ApprovalID]
		if !ok {
			d = workflow.ApprovalOutcome{ApprovalID: c.ApprovalID, Decision: workflow.DecisionExpire}
		}
		r.decisions[c.ID] = d
	}
	return r
}

// resumedUsage is the usage a resumed attempt's saved state carries.
func resumedUsage(p workflow.TaskInput) Usage {
	var st savedState
	if p.Resume == nil || json.Unmarshal(p.Resume.State, &st) != nil {
		return Usage{}
	}
	return Usage{Tokens: st.TokensUsed, ToolCalls: st.ToolCalls, CostUSD: st.CostUSD}
}
