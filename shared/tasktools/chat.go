package tasktools

import (
	"context"

	"github.com/conclave-ai/conclave/shared/agents"
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
	res, err := c.call(ctx, who, call)
	return conversations.ToolResult{Text: res.text, Pending: res.pending, Handoff: res.handoff, Delivered: res.delivered}, err
}
