// Package approvals is a human's approval of an agent's tool call: the
// per-team policy saying which calls need one, the approval record (the
// call with its arguments, waiting on a task token of the task's
// delegation execution), and the decision (approve, optionally with
// edited arguments, or reject; an approval nobody decides expires as a
// rejection). The decision is one conditional write, so a call is decided
// once; the waiting execution gets it through its task token
// (workflow.Callbacks), with nothing running while it waits.
package approvals

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// Status is an approval's state.
type Status string

// Statuses: pending until decided once; expired is a rejection nobody
// made; canceled is an approval whose task ended (canceled, failed,
// reassigned) while it waited, in the same transaction as the task's
// change (tasks.Change.EndApprovals). None but pending changes again.
const (
	Pending  Status = "pending"
	Approved Status = "approved"
	Rejected Status = "rejected"
	Expired  Status = "expired"
	Canceled Status = tasks.ApprovalCanceled
)

// Statuses lists every status, for validation.
var Statuses = []Status{Pending, Approved, Rejected, Expired, Canceled}

// The policy's limits.
const (
	// DefaultExpirySeconds is how long an approval waits for a decision
	// when the policy names no expiry: 24 hours.
	DefaultExpirySeconds = 24 * 3600
	// MinExpirySeconds and MaxExpirySeconds bound the policy's expiry.
	MinExpirySeconds = 5
	MaxExpirySeconds = 24 * 3600
	// MaxListed bounds the tools, the agents and the deciders a policy
	// names.
	MaxListed = 50
	// MaxReason bounds a decision's reason.
	MaxReason = 1000
	// MaxArguments bounds a decision's edited arguments (bytes of JSON).
	MaxArguments = 32 * 1024
)

// Reasons an approval is required (Approval.Reasons).
const (
	ReasonPolicyTool  = "policy:tool"
	ReasonPolicyAgent = "policy:agent"
	ReasonPolicyCost  = "policy:cost"
	// ReasonSkillPrefix + a skill's name: the tool is among the tools of
	// a skill of the calling agent that supports_hitl.
	ReasonSkillPrefix = "skill:"
)

// Policy is a team's rule for which tool calls wait for a human: a call
// of one of Tools, a call by one of Agents, or a call whose estimated cost
// is at least MinEstimatedCostUSD. Any match requires approval; so does a
// tool listed in a supports_hitl skill of the calling agent, whatever the
// policy.
type Policy struct {
	Tools  []string `json:"tools"`
	Agents []string `json:"agents"`
	// MinEstimatedCostUSD: nil means no cost rule.
	MinEstimatedCostUSD *float64 `json:"min_estimated_cost_usd,omitempty"`
	// ExpirySeconds is how long an approval waits before it expires as a
	// rejection (DefaultExpirySeconds when 0).
	ExpirySeconds int `json:"expiry_seconds"`
	// Deciders are the user ids of the members who may read and decide
	// approvals (a key and an admin always may); empty: no member may.
	Deciders  []string   `json:"deciders"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
	UpdatedBy string     `json:"updated_by,omitempty"`
}

// Expiry is the policy's expiry in seconds, the default when unset.
func (p Policy) Expiry() int {
	if p.ExpirySeconds <= 0 {
		return DefaultExpirySeconds
	}
	return p.ExpirySeconds
}

// EstimatedCost is what a call of tool is estimated to cost: the cap it
// reserves. A delegation (delegate_task, request_report: a task of the
// caller's delegation tree) reserves the tree's cost cap (treeCapUSD, the
// default when 0); a collaboration session reserves a session's cap.
// Every other tool is 0.
func EstimatedCost(tool string, treeCapUSD float64) float64 {
	switch tool {
	case "delegate_task", "request_report":
		if treeCapUSD > 0 {
			return treeCapUSD
		}
		return tasks.DefaultCostCapUSD
	case "start_collaboration":
		return sessions.MaxCostUSD
	}
	return 0
}

// Required reports why a call of tool by agent a, estimated at cost,
// needs a human's approval under p; nil when it does not.
func Required(p Policy, a agents.Agent, tool string, cost float64) []string {
	var why []string
	if slices.Contains(p.Tools, tool) {
		why = append(why, ReasonPolicyTool)
	}
	if slices.Contains(p.Agents, a.Slug) {
		why = append(why, ReasonPolicyAgent)
	}
	if p.MinEstimatedCostUSD != nil && cost >= *p.MinEstimatedCostUSD {
		why = append(why, ReasonPolicyCost)
	}
	for _, sk := range a.Skills {
		if sk.SupportsHITL && slices.Contains(sk.Tools, tool) {
			why = append(why, ReasonSkillPrefix+sk.Name)
		}
	}
	return why
}

// Approval is one tool call waiting for (or decided by) a human.
type Approval struct {
	TeamID string `json:"-"`
	ID     string `json:"id"`
	Status Status `json:"status"`
	Tool   string `json:"tool"`
	// Arguments are the call's arguments as the model wrote them.
	Arguments json.RawMessage `json:"arguments"`
	// ApprovedArguments are the arguments a human approved the call with
	// when they edited them.
	ApprovedArguments json.RawMessage `json:"approved_arguments,omitempty"`
	Agent             string          `json:"agent"`
	TaskID            string          `json:"task_id,omitempty"`
	ConversationID    string          `json:"conversation_id,omitempty"`
	CallID            string          `json:"call_id"`
	Reasons           []string        `json:"reasons"`
	EstimatedCostUSD  float64         `json:"estimated_cost_usd"`
	// Reason is the decision's (a rejection's reason is the model's to
	// read).
	Reason    string `json:"reason,omitempty"`
	DecidedBy string `json:"decided_by,omitempty"`
	// UserID is the person who decided (a bearer token's user, or the
	// user a key acted for); empty for a key's own decision or an expiry.
	UserID    string     `json:"user_id,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	// Token is the task token of the execution waiting for the decision;
	// ExecutionARN that execution. Neither is shown.
	Token        string `json:"-"`
	ExecutionARN string `json:"-"`
}

// Decision is a conditional write of a human's (or the expiry's) decision.
type Decision struct {
	Status    Status
	Arguments json.RawMessage
	Reason    string
	By        string
	UserID    string // the person deciding, if any (Approval.UserID)
	At        time.Time
}

// Filter narrows a listing; an empty Status lists every approval.
type Filter struct {
	Status Status
	TaskID string
}

// Store persists policies and approvals.
type Store interface {
	// GetApprovalPolicy returns the team's policy, the zero policy when
	// it has none.
	GetApprovalPolicy(ctx context.Context, teamID string) (Policy, error)
	PutApprovalPolicy(ctx context.Context, teamID string, p Policy) error
	// RegisterApproval stores a new approval, or, when it exists and is
	// still pending, replaces its task token and execution (a retried
	// registration). It returns the approval as stored; a decided one
	// comes back as it is, with created false and nothing written.
	RegisterApproval(ctx context.Context, a Approval) (stored Approval, created bool, err error)
	GetApproval(ctx context.Context, teamID, id string) (Approval, error)
	ListApprovals(ctx context.Context, teamID string, f Filter, p paging.Page) ([]Approval, string, error)
	// DecideApproval writes d on a pending approval (conditioned on
	// pending) and returns it as written; ECONFLICT with the current status otherwise,
	// ENOTFOUND for none.
	DecideApproval(ctx context.Context, teamID, id string, d Decision) (Approval, error)
}
