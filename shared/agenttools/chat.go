package agenttools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/tools/catalog"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Chat gives agents answering in a conversation their tools
// (conversations.Tools): the same tools as in a task, as the catalog
// allows them in a chat (handoff_to among them), acting for the agent
// with the conversation as their link, and the tools of the tool packs
// its skill names or it asks for (conversations.PackTools): the same
// packs, MCP calls and their checks as a task's.
type Chat struct{ *Tools }

var (
	_ conversations.Tools     = Chat{}
	_ conversations.PackTools = Chat{}
)

// Specs implements conversations.Tools.
func (c Chat) Specs(a agents.Agent) []models.Tool { return c.offered(a, catalog.InChat) }

// PackSpecs are the tools of packs an agent is given in a chat reply: the
// built-in ones as the catalog allows them there, behind their flags and
// services, then those of the team's MCP packs. With collaboration off an
// agent has no tool at all, a pack's included.
func (c Chat) PackSpecs(ctx context.Context, teamID string, _ agents.Agent, packs []string) []models.Tool {
	if !c.Flags.On(settings.FlagCollaboration) {
		return nil
	}
	return append(c.packSpecs(packs, catalog.InChat), c.mcpPackSpecs(ctx, teamID, packs)...)
}

// Augment implements conversations.PackTools as a task's tools take its
// packs' (worker.Augment).
func (c Chat) Augment(ctx context.Context, teamID string, a agents.Agent, tools []models.Tool, packs []string) []models.Tool {
	if len(packs) == 0 {
		return tools
	}
	return worker.Augment(slices.Clone(tools), c.PackSpecs(ctx, teamID, a, packs))
}

// Call implements conversations.Tools. A tool that asks a model (a
// bridging tool) charges what is left of the turn's tokens
// (tc.TokensLeft) as a task's charges the task's, on a worker.Meter; the
// result says what it used.
func (c Chat) Call(ctx context.Context, tc conversations.ToolCaller, call models.ToolCall) (conversations.ToolResult, error) {
	// Only what the agent was offered runs (never nil: nothing offered
	// runs nothing).
	who := caller{teamID: tc.TeamID, agent: tc.Agent, conversationID: tc.ConversationID, waitUntil: tc.WaitUntil, allowed: append([]models.Tool{}, tc.Offered...), forUser: tc.ForUser}
	if held, gated := c.holdForApproval(ctx, tc, call); gated {
		return held, nil
	}
	meter := worker.NewMeter(tc.TokensLeft)
	res, err := c.call(worker.WithMeter(ctx, meter), who, call)
	out := conversations.ToolResult{Text: res.text, Pending: res.pending, Handoff: res.handoff, Delivered: res.delivered}
	out.Tokens, out.CostUSD = meter.Charged()
	if res.pack != "" {
		out.Pack, out.Offered = res.pack, worker.Augment(slices.Clone(tc.Offered), res.packTools)
	}
	return out, err
}

// ApprovalRequired is the tool error of a chat call that needs a human's
// approval and cannot wait for one: the approval policy could not be
// read, the tool runs in a chat reply only (handoff_to), or the task that
// would finish the reply could not be created.
const ApprovalRequired = "approval_required"

// holdForApproval holds a call the team's approval policy (or a
// supports_hitl skill of the agent) gates. A chat turn cannot wait hours
// for a human, so the reply is finished by a task of the same agent
// linked to the conversation (docs/approvals.md, "In a chat reply"): its
// delegation execution waits for the decision on a task token, runs the
// call as decided, lets the model finish and posts that answer into the
// conversation. The reply lists the approval and the task among its
// pending work. A policy that cannot be read refuses the call: nothing
// runs unapproved for want of a read. A tool the reply has from a pack
// (an MCP pack's) is gated as in a task, and its task is given that pack.
func (c Chat) holdForApproval(ctx context.Context, tc conversations.ToolCaller, call models.ToolCall) (conversations.ToolResult, bool) {
	d, known := defs[call.Name]
	mcp := !known && c.isMCPTool(call.Name)
	if c.Approvals == nil || !known && !mcp || !slices.ContainsFunc(tc.Offered, func(t models.Tool) bool { return t.Name == call.Name }) {
		return conversations.ToolResult{}, false
	}
	pol, err := c.Approvals.Policy(ctx, tc.TeamID)
	if err != nil {
		return refusal([]string{"the approval policy could not be read"}, "it was not run. Tell the user, and try again later."), true
	}
	a := agents.Agent{Slug: tc.Agent, Skills: tc.Skills}
	cost := approvals.EstimatedCost(call.Name, 0)
	why := approvals.Required(pol, a, call.Name, cost)
	if len(why) == 0 {
		return conversations.ToolResult{}, false
	}
	// Arguments the schema refuses are the model's to fix now, not a
	// human's to approve.
	if known {
		if res, valid := d.validate(call.Input); !valid {
			return conversations.ToolResult{Text: res.text}, true
		}
	} else if _, refused := c.checkMCPCall(ctx, tc.TeamID, call); refused != "" {
		return conversations.ToolResult{Text: refused}, true
	}
	packs, inTask := c.heldPacks(ctx, tc, a, call.Name)
	if !inTask {
		return refusal(why, call.Name+" runs in a chat reply only, where nothing can wait for a human: it was not run. Tell the user."), true
	}
	args := json.RawMessage(bytes.TrimSpace([]byte(call.Input)))
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	held := &workflow.ApprovalWait{ApprovalID: approvals.NewID(), CallID: call.ID, Tool: call.Name, Arguments: args, Agent: tc.Agent,
		Reasons: why, EstimatedCostUSD: cost, TimeoutSeconds: pol.Expiry(), ConversationID: tc.ConversationID}
	if held.CallID == "" {
		held.CallID = ids.New("call")
	}
	t, err := c.Tasks.Create(ctx, tc.TeamID, tasks.Creator{Type: "agent", ID: tc.Agent}, tasks.CreateInput{
		Assignee: tc.Agent, ConversationID: tc.ConversationID, Type: "execute",
		Title:        clip.Clip("Finish a reply: "+call.Name+" awaiting approval", 120),
		Instructions: continuation(tc, call.Name), Context: transcript(tc.Messages), HeldCall: held, ToolPacks: packs,
	}, true)
	if err != nil {
		// A refused create (the agent's five tasks) is the model's to tell.
		why := err.Error()
		if res, rerr := refused(err); rerr == nil {
			why = res.text
		}
		return refusal(held.Reasons, "it needs a human's approval, and the task that would wait for it could not be created ("+why+"): it was not run. Tell the user."), true
	}
	b, _ := json.Marshal(map[string]any{"status": "awaiting_approval", "approval_id": held.ApprovalID, "task_id": t.ID, "reasons": why,
		"message": fmt.Sprintf("this call needs a human's approval: it has not run. It waits as approval %s; once a human decides, you will finish this answer in task %s and it will be posted in this conversation. Tell the user it is waiting for approval.", held.ApprovalID, t.ID)})
	return conversations.ToolResult{Text: string(b),
		Approval: &conversations.WorkRef{Type: conversations.WorkApproval, ID: held.ApprovalID, Status: string(approvals.Pending), Agent: tc.Agent},
		Pending:  &conversations.WorkRef{Type: "task", ID: t.ID, Status: string(t.Status), Agent: tc.Agent},
	}, true
}

// heldPacks says whether the task that finishes a reply can make a call
// of tool name: one of a's own tools in a task, or a tool of one of the
// reply's packs (packs: the one that has it, which the task is given).
func (c Chat) heldPacks(ctx context.Context, tc conversations.ToolCaller, a agents.Agent, name string) (packs []string, ok bool) {
	has := func(tools []models.Tool) bool {
		return slices.ContainsFunc(tools, func(t models.Tool) bool { return t.Name == name })
	}
	if has(c.offered(a, catalog.InTask)) {
		return nil, true
	}
	for _, p := range tc.Packs {
		if has(c.Tools.PackSpecs(ctx, tc.TeamID, a, []string{p})) {
			return []string{p}, true
		}
	}
	return nil, false
}

func refusal(why []string, message string) conversations.ToolResult {
	b, _ := json.Marshal(map[string]any{"error": ApprovalRequired, "reasons": why, "message": "this call needs a human's approval; " + message})
	return conversations.ToolResult{Text: string(b)}
}

// continuation is the held task's instructions: finish the reply.
func continuation(tc conversations.ToolCaller, tool string) string {
	var asked string
	for _, m := range tc.Messages {
		if m.Role == "user" {
			asked = m.Content
		}
	}
	return fmt.Sprintf("You were answering the user in conversation %s. Their message:\n\n%s\n\n"+
		"To answer it you called %s, which needed a human's approval. The decision has been made: the call's result (or the rejection) follows. "+
		"Finish your answer to the user with it; your answer is posted in the conversation.", tc.ConversationID, clip.Clip(asked, 8000), tool)
}

// maxTranscript bounds the held task's context (tasks accept 20,000
// characters); the end of the conversation is kept.
const maxTranscript = 16000

// transcript is the reply's conversation so far, as the held task's
// context.
func transcript(msgs []models.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		switch {
		case len(m.ToolCalls) > 0:
			for _, c := range m.ToolCalls {
				fmt.Fprintf(&b, "you called %s %s\n", c.Name, clip.Clip(c.Input, 1000))
			}
		case m.Role == "tool":
			fmt.Fprintf(&b, "tool result: %s\n", clip.Clip(m.Content, 2000))
		default:
			fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Content)
		}
	}
	s := b.String()
	if len(s) > maxTranscript {
		cut := len(s) - maxTranscript
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		s = "…" + s[cut:]
	}
	return s
}
