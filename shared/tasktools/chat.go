package tasktools

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/approvals"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/toolset"
)

// Chat gives agents answering in a conversation their tools
// (conversations.Tools): the same tools as in a task, as the catalog
// allows them in a chat (handoff_to among them), acting for the agent
// with the conversation as their link.
type Chat struct{ *Tools }

var _ conversations.Tools = Chat{}

// Specs implements conversations.Tools.
func (c Chat) Specs(a agents.Agent) []models.Tool { return c.offered(a, toolset.InChat) }

// Call implements conversations.Tools.
func (c Chat) Call(ctx context.Context, tc conversations.ToolCaller, call models.ToolCall) (conversations.ToolResult, error) {
	// Only what the agent was offered runs (never nil: nothing offered
	// runs nothing).
	who := caller{teamID: tc.TeamID, agent: tc.Agent, conversationID: tc.ConversationID, waitUntil: tc.WaitUntil, allowed: append([]models.Tool{}, tc.Offered...)}
	if refusal, gated := c.needsApproval(ctx, tc, call); gated {
		return conversations.ToolResult{Text: refusal}, nil
	}
	res, err := c.call(ctx, who, call)
	return conversations.ToolResult{Text: res.text, Pending: res.pending, Handoff: res.handoff, Delivered: res.delivered}, err
}

// ApprovalRequired is the tool error of a chat call that would need a
// human's approval: approvals of tool calls run in tasks only (a task
// waits blocked for the decision; a chat turn cannot), so the call is not
// run and the model is told why.
const ApprovalRequired = "approval_required"

// needsApproval refuses a call the team's approval policy (or a
// supports_hitl skill of the agent) gates. A policy that cannot be read
// refuses the call too: nothing runs unapproved for want of a read.
func (c Chat) needsApproval(ctx context.Context, tc conversations.ToolCaller, call models.ToolCall) (string, bool) {
	if c.Approvals == nil || !slices.ContainsFunc(tc.Offered, func(t models.Tool) bool { return t.Name == call.Name }) {
		return "", false
	}
	pol, err := c.Approvals.Policy(ctx, tc.TeamID)
	why := []string{"the approval policy could not be read"}
	if err == nil {
		why = approvals.Required(pol, agents.Agent{Slug: tc.Agent, Skills: tc.Skills}, call.Name, approvals.EstimatedCost(call.Name, 0))
	}
	if len(why) == 0 {
		return "", false
	}
	b, _ := json.Marshal(map[string]any{"error": ApprovalRequired, "reasons": why,
		"message": "this call needs a human's approval, and approvals of tool calls run in tasks only, not in a chat reply: it was not run. Tell the user, or do the work as a task."})
	return string(b), true
}
