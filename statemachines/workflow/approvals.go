package workflow

import (
	"encoding/json"
	"fmt"
)

// A tool call that needs a human's approval (shared/work/approvals) stops the
// task's worker: it returns TaskResult.Waiting with Approvals instead of
// running the model response's calls. The delegation machine then blocks
// the task (ActionBlockForApproval: it gives its concurrency slot back and
// its deadline is cleared), registers one task token per approval
// (ActionRequestApproval, in the AwaitApprovals Map: nothing runs while a
// human decides), expires an approval whose wait times out
// (ActionExpireApproval), takes the task back (ActionResumeApproved: a
// slot again and a fresh deadline) and runs the worker with every
// decision (Resume.Approvals), which runs the response's calls then.

// Lifecycle actions of the approval states of the delegation machine.
const (
	ActionBlockForApproval = "block_for_approval"
	ActionRequestApproval  = "request_approval"
	ActionExpireApproval   = "expire_approval"
	ActionResumeApproved   = "resume_approved"
)

// Decisions an approval ends with (ApprovalOutcome.Decision).
const (
	DecisionApprove = "approve"
	DecisionReject  = "reject"
	// DecisionExpire: nobody decided in time; the call is rejected.
	DecisionExpire = "expire"
)

// ApprovalWait is one tool call waiting for a human, as the worker hands
// it to the machine: the approval's id (made by the worker, so a retried
// registration stores it once), the call and why it needs approval.
type ApprovalWait struct {
	ApprovalID string `json:"approval_id"`
	CallID     string `json:"call_id"`
	Tool       string `json:"tool"`
	// Arguments are the call's arguments as the model wrote them (a JSON
	// object).
	Arguments json.RawMessage `json:"arguments"`
	Agent     string          `json:"agent"`
	// Reasons name what requires the approval: policy:tool, policy:agent,
	// policy:cost, skill:<skill name>.
	Reasons          []string `json:"reasons"`
	EstimatedCostUSD float64  `json:"estimated_cost_usd"`
	// TimeoutSeconds is how long the approval waits before it expires
	// (the policy's expiry): the wait's TimeoutSecondsPath.
	TimeoutSeconds int `json:"timeout_seconds"`
	// ConversationID is the conversation of a call a chat reply made
	// (TaskInput.HeldCall); empty for a task's own calls.
	ConversationID string `json:"conversation_id,omitempty"`
}

// ApprovalOutcome is what a decided (or expired) approval sends the
// execution waiting on it, and what the resumed worker reads.
type ApprovalOutcome struct {
	ApprovalID string `json:"approval_id"`
	// Decision is DecisionApprove, DecisionReject or DecisionExpire.
	Decision string `json:"decision"`
	// Arguments are the arguments to run the call with: the human's
	// edited ones, or the model's (approve only).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Reason    string          `json:"reason,omitempty"`
}

// ApprovalStep is the payload of the approval states (the task's ids and
// one approval of the Map, or none for the block and resume states).
type ApprovalStep struct {
	Machine      string        `json:"machine"`
	Action       string        `json:"action"`
	TeamID       string        `json:"team_id"`
	TaskID       string        `json:"task_id"`
	ExecutionARN string        `json:"execution_arn"`
	Approval     *ApprovalWait `json:"approval,omitempty"`
	TaskToken    string        `json:"task_token,omitempty"`
}

// AgentBusy is a task that cannot take its agent's concurrency slot back
// after an approval (the agent took five other tasks while it waited): the
// machine retries with backoff until one is free.
type AgentBusy struct{ Msg string }

func (e AgentBusy) Error() string { return e.Msg }

// StageBusy is the AgentBusy of a session stage whose agent is at its
// limit: its message names the agent and the stage's slot ticket, which
// the state that catches it passes to the await_slot step (the error's
// Cause is all a Catch hands on).
func StageBusy(agent, ticket string) AgentBusy {
	return AgentBusy{Msg: fmt.Sprintf("agent %s is at its limit; stage %s waits for a slot", agent, ticket)}
}

// ParseStageBusy reads StageBusy's message back: the agent and the
// ticket (ok false for any other message).
func ParseStageBusy(msg string) (agent, ticket string, ok bool) {
	var a, t string
	if _, err := fmt.Sscanf(msg, "agent %s is at its limit; stage %s waits for a slot", &a, &t); err != nil {
		return "", "", false
	}
	return a, t, a != "" && t != ""
}
