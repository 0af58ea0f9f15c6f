package conversations

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// An agent answering a turn may call the collaboration tools (Tools): it
// delegates, requests a report, starts a session, messages a colleague or
// hands the conversation over, and answers with what came back. A turn
// has a task's budgets: at most workflow.MaxTaskToolCalls tool calls and
// workflow.MaxTaskTokens tokens over all its model calls. The loop stops
// at either: past the tool-call budget the model is asked once more, with
// no tool, to answer with what it has; once the tokens are spent no model
// is asked again and the reply says it stopped. Work that cannot finish
// before the turn must answer (a delegation still running) goes on: the
// reply lists it (Message.Pending) and says so, and its result is posted
// into the conversation when it ends.
//
// Tools are offered only when one agent answers at a time (direct,
// mention, handoff, router, TOP_1, fallback, CASCADE, whose candidates
// share the turn's budget). A TOP_K or ENSEMBLE that asks several agents
// at once keeps or merges their replies: a discarded reply's delegations
// and messages would be work nobody asked for. One that selected a single
// agent answers with one, which has its tools.
//
// Beside its own tools, a reply is given the tools of the tool packs its
// answering skill names (agents.Skill.Packs: a chosen skill's, or every
// skill's when no skill match chose the agent), and of those
// request_tool_pack adds for the rest of the reply (PackTools). A call
// of a pack's tool is a tool call like any other, and the tokens a tool's
// own model calls use (the bridging tools: ToolResult.Tokens) count in
// the turn's token budget as the model's do.

// Tools are the tools of agents answering in a conversation.
type Tools interface {
	// Specs are the tools a may call in a chat reply: the collaboration
	// tools the stage's flags turn on and the tools its skills declare.
	Specs(a agents.Agent) []models.Tool
	// Call runs one tool for the agent in c. What the agent can act on (a
	// refused delegation, an unknown task) is the result's Text; only
	// infrastructure failures are errors.
	Call(ctx context.Context, c ToolCaller, call models.ToolCall) (ToolResult, error)
}

// PackTools gives a reply the tools of tool packs (shared/tools/toolpacks)
// beside its agent's own: the packs its answering skill names
// (agents.Agent.Packs). Tools that do not implement it give a reply no
// pack's tools but those request_tool_pack adds (ToolResult.Pack).
type PackTools interface {
	// Augment returns tools with the tools of packs that it does not hold
	// yet, in order, each once, as the agent a is given them in a chat
	// reply of team teamID; ctx bounds the reads of the team's MCP packs.
	Augment(ctx context.Context, teamID string, a agents.Agent, tools []models.Tool, packs []string) []models.Tool
}

// ResultPoster posts into its conversation the result of work a reply
// waited for (ToolResult.Delivered) when no stored message carries it:
// the agent failed after the work ended (its last model call), another
// agent's reply was kept (CASCADE), or the turn was not stored. Without
// it that result would reach the conversation nowhere, since the work,
// waited for in the reply, posts nothing of its own.
type ResultPoster interface {
	// PostUndelivered posts work's result into conversation convID as the
	// message of the agent that did it, once (a redelivered call posts
	// nothing). Work that belongs to another conversation is not posted.
	PostUndelivered(ctx context.Context, teamID, convID string, work WorkRef) error
}

// ToolCaller is the agent calling a tool in a chat reply.
type ToolCaller struct {
	TeamID         string
	ConversationID string
	Agent          string
	// Skills are the agent's (a tool of a supports_hitl skill needs a
	// human's approval).
	Skills []agents.Skill
	// WaitUntil is the latest a tool may wait for work it started: after
	// it, the reply still has to be written and the turn committed.
	WaitUntil time.Time
	// Offered are the tools the agent was given for this reply; no other
	// runs.
	Offered []models.Tool
	// Packs are the tool packs the reply was given the tools of: its
	// skill's (PackTools) and those request_tool_pack added. A call held
	// for a human's approval is finished in a task given the pack its
	// tool came from.
	Packs []string
	// TokensLeft is what is left of the turn's token budget as the call
	// starts: a tool that asks a model (a bridging tool) fits in it and
	// says what it used (ToolResult.Tokens).
	TokensLeft int
	// Messages are the reply's model conversation before the response
	// whose call this is (the history, the user's message, earlier tool
	// calls and results): a call held for a human's approval is finished
	// from them later, in a task.
	Messages []models.Message
	// ForUser, when set, is the API key id of the user whose message a
	// kind skill turned into this call (kinds.go): the report or session
	// it starts is the user's request, led or written by the agent (an
	// agent cannot request a report from itself).
	ForUser string
}

// ToolResult is what a tool answered.
type ToolResult struct {
	Text string
	// Pending is work the tool started that goes on after the reply.
	Pending *WorkRef
	// Approval is a call held for a human's approval (its WorkRef type is
	// "approval"): the reply lists it among its pending work beside the
	// task (Pending) that finishes the reply once it is decided.
	Approval *WorkRef
	// Delivered is work that ended while the tool waited and whose result
	// Text carries: this reply is then its only delivery (a delegation
	// waited for in the reply posts nothing of its own). When the reply is
	// not what the turn stores, the turn posts it (Config.Results).
	Delivered *WorkRef
	// Handoff asks for the conversation to move to another agent with
	// this turn (handoff_to); the turn validates and commits it.
	Handoff *HandoffRequest
	// Tokens and CostUSD are what the tool's own model calls used (a
	// bridging tool's): the turn's token budget counts them.
	Tokens  int
	CostUSD float64
	// Pack is a tool pack the call added to the reply (request_tool_pack)
	// and Offered the reply's tools with the pack's: the model is offered
	// them from its next step to the end of the reply.
	Pack    string
	Offered []models.Tool
}

// HandoffRequest is an agent handing the conversation over from a reply.
type HandoffRequest struct {
	To      string
	Reason  string
	Summary string
}

// WorkApproval is the WorkRef type of a tool call held for a human's
// approval (ToolResult.Approval).
const WorkApproval = "approval"

// ToolUse is one tool call of a reply, as the reply records it.
type ToolUse struct {
	Tool   string `json:"tool"`
	Input  string `json:"input"`
	Output string `json:"output"`
}

// Why a reply's tool loop ended early (Message.Stopped).
const (
	StoppedToolCalls = "tool_call_budget"
	StoppedTokens    = "token_budget"
)

// toolAnswerReserve is kept back from a tool's wait for the model's
// answer after it and the commit.
const toolAnswerReserve = 6 * time.Second

// turnBudget is what one turn's tool loops may still use.
type turnBudget struct {
	tokens, calls int
}

func newTurnBudget() *turnBudget { return &turnBudget{} }

// loop is one agent's model calls and tool calls in a reply.
type loop struct {
	s       *Service
	a       agents.Agent
	caller  ToolCaller
	budget  *turnBudget
	byslug  map[string]agents.Agent
	conv    Conversation
	uses    []ToolUse
	pending []WorkRef
	// delivered: work whose result only this reply carries (ToolResult.Delivered).
	delivered []WorkRef
	handoff   *handover
	// returning: the turn returns the conversation to this agent ("@kyra"),
	// the one handover a turn commits; handoff_to waits for a later turn.
	returning bool
	stopped   string
	inTokens  int
	outToks   int
	cost      float64
	// watch sees the tool calls of the answer msgID; said is what the
	// model wrote before its tool calls (spoken).
	watch Watcher
	msgID string
	said  []string
}

// converse asks the model, running the tools it calls until it answers;
// the response returned carries the whole loop's tokens.
func (l *loop) converse(ctx context.Context, req models.Request) (models.Response, error) {
	onDelta := req.OnDelta
	for {
		if onDelta != nil {
			// What the model writes after a tool call follows what it
			// wrote before, as in the stored reply (spoken).
			first := true
			req.OnDelta = func(t string) {
				if first && t != "" && len(l.said) > 0 {
					onDelta(replySeparator)
				}
				first = first && t == ""
				onDelta(t)
			}
		}
		resp, err := l.s.model.Converse(ctx, req)
		if err != nil {
			return resp, err
		}
		l.inTokens += resp.InputTokens
		l.outToks += resp.OutputTokens
		l.cost += models.Cost(resp.ModelID, resp.InputTokens, resp.OutputTokens)
		l.budget.tokens += resp.InputTokens + resp.OutputTokens
		if len(resp.ToolCalls) == 0 {
			return l.total(resp), nil
		}
		if l.budget.tokens >= workflow.MaxTaskTokens {
			return l.outOfTokens(resp, resp.Text), nil
		}
		for i, call := range resp.ToolCalls {
			l.caller.Messages = slices.Clone(req.Messages)
			said := ""
			if i == 0 {
				// The model sees what it wrote before its calls.
				said = resp.Text
			}
			req.Messages = append(req.Messages, models.Message{Role: "assistant", Content: said, ToolCalls: []models.ToolCall{call}})
			out := l.call(ctx, call)
			req.Messages = append(req.Messages, models.Message{Role: "tool", Content: out, ToolCallID: call.ID})
		}
		if resp.Text != "" {
			l.said = append(l.said, resp.Text)
		}
		if l.budget.tokens >= workflow.MaxTaskTokens {
			// A tool's own model calls (a bridging tool) spent the rest.
			return l.outOfTokens(resp, ""), nil
		}
		if req.Tools != nil {
			// A pack request_tool_pack added is offered from the next step.
			req.Tools = l.caller.Offered
		}
		if l.stopped == StoppedToolCalls {
			if req.Tools == nil {
				// Asked to answer without tools, it asked for tools again.
				resp.ToolCalls, resp.Text = nil, ""
				if strings.TrimSpace(spoken(l.said, "")) == "" {
					resp.Text = fmt.Sprintf("I had to stop before finishing: this reply used its %d tool calls.", workflow.MaxTaskToolCalls)
				}
				return l.total(resp), nil
			}
			req.Tools = nil // answer now, with what the tools gave
		}
	}
}

// outOfTokens ends the loop once the turn's tokens are spent: no model
// is asked again, and the reply is what was said (last, after what it
// said before its tool calls), or that it stopped.
func (l *loop) outOfTokens(resp models.Response, last string) models.Response {
	l.stopped = StoppedTokens
	resp.ToolCalls, resp.Text = nil, last
	if strings.TrimSpace(spoken(l.said, last)) == "" {
		resp.Text = fmt.Sprintf("I had to stop before finishing: this reply used its budget of %d tokens.", workflow.MaxTaskTokens)
	}
	return l.total(resp)
}

// total is the loop's answer: the whole loop's tokens, and all it said.
func (l *loop) total(resp models.Response) models.Response {
	resp.InputTokens, resp.OutputTokens = l.inTokens, l.outToks
	resp.Text = spoken(l.said, resp.Text)
	return resp
}

// call runs one tool within the turn's budgets: its tool calls, and its
// tokens, which a tool's own model calls spend too.
func (l *loop) call(ctx context.Context, call models.ToolCall) string {
	if l.budget.calls >= workflow.MaxTaskToolCalls {
		l.stopped = StoppedToolCalls
		out := fmt.Sprintf("not run: this reply has used its %d tool calls; answer with what you have", workflow.MaxTaskToolCalls)
		l.uses = append(l.uses, ToolUse{Tool: call.Name, Input: clip.Clip(call.Input, 500), Output: out})
		return out
	}
	if l.budget.tokens >= workflow.MaxTaskTokens {
		// An earlier call of the response (a bridging tool) spent them.
		l.stopped = StoppedTokens
		out := fmt.Sprintf("not run: this reply has used its budget of %d tokens", workflow.MaxTaskTokens)
		l.uses = append(l.uses, ToolUse{Tool: call.Name, Input: clip.Clip(call.Input, 500), Output: out})
		return out
	}
	l.budget.calls++
	l.caller.TokensLeft = workflow.MaxTaskTokens - l.budget.tokens
	ev := ToolEvent{MessageID: l.msgID, Agent: l.a.Slug, CallID: call.ID, Tool: call.Name, Input: clip.Clip(call.Input, 500)}
	if l.watch != nil {
		l.watch.ToolCalled(ev)
	}
	res, err := l.s.tools.Call(ctx, l.caller, call)
	// What the tool's own model calls used is the turn's, as the model's.
	l.budget.tokens += res.Tokens
	l.cost += res.CostUSD
	out := res.Text
	switch {
	case err != nil:
		l.s.log.WarnContext(ctx, "chat tool failed", "tool", call.Name, "agent", l.a.Slug, "error", err.Error())
		out = "the tool failed: " + err.Error()
	case res.Handoff != nil:
		out = l.handOver(*res.Handoff)
	}
	if res.Approval != nil {
		l.pending = append(l.pending, *res.Approval)
	}
	if res.Pending != nil {
		l.pending = append(l.pending, *res.Pending)
	}
	if res.Delivered != nil {
		l.delivered = append(l.delivered, *res.Delivered)
	}
	if res.Pack != "" && err == nil {
		// request_tool_pack: its tools are the reply's from the next step.
		if !slices.Contains(l.caller.Packs, res.Pack) {
			l.caller.Packs = append(l.caller.Packs, res.Pack)
		}
		if res.Offered != nil {
			l.caller.Offered = res.Offered
		}
	}
	l.uses = append(l.uses, ToolUse{Tool: call.Name, Input: clip.Clip(call.Input, 500), Output: clip.Clip(out, 1000)})
	if l.watch != nil {
		ev.Output = clip.Clip(out, 1000)
		l.watch.ToolAnswered(ev)
	}
	return out
}

// handOver checks an agent's handoff_to and keeps it for the turn's
// commit: the same writes as POST …/handoff (newHandover), from the
// agent answering, which the turn makes current.
func (l *loop) handOver(h HandoffRequest) string {
	to, ok := l.byslug[h.To]
	switch {
	case l.returning:
		return "rejected: the conversation was just returned to you; hand it over in a later turn"
	case l.handoff != nil:
		return "rejected: you already handed this conversation to " + l.handoff.handoff.To
	case h.To == l.a.Slug:
		return "rejected: the conversation is already with you"
	case !ok:
		return fmt.Sprintf("rejected: %q is not an active agent of the team", h.To)
	case strings.TrimSpace(h.Reason) == "":
		return "rejected: a handoff needs a reason"
	}
	ho, err := l.s.newHandover(l.conv, l.a, to, KindHandoff, clip.Clip(h.Reason, MaxReason), clip.Clip(h.Summary, MaxSummary))
	if err != nil {
		return "rejected: " + err.Error()
	}
	l.handoff = &ho
	return fmt.Sprintf("the conversation goes to %s (%s) after this reply; tell the user", to.Name, to.Slug)
}

// pendingNote is what a reply says of work still running, unless it
// already names it.
func pendingNote(text string, pending []WorkRef) string {
	var missing []string
	for _, p := range pending {
		switch {
		case strings.Contains(text, p.ID):
		case p.Type == WorkApproval:
			missing = append(missing, fmt.Sprintf("approval %s (a call of %s waiting for a human's decision)", p.ID, p.Agent))
		default:
			missing = append(missing, fmt.Sprintf("%s %s (%s)", p.Type, p.ID, p.Agent))
		}
	}
	if len(missing) == 0 {
		return text
	}
	return text + "\n\nStill running: " + strings.Join(missing, ", ") + ". The result will be posted in this conversation when it is ready."
}
