package conversations

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/prompts"
)

// Asking one agent is four steps, each on the value the one before made:
// its prompt (promptFor: the system prompt from its context, read once),
// the model request (request: the prompt, the history and the user's
// message), the call (the model, or the tool loop around it: callModel),
// and the answer made of what the call returned (answerFrom).

// ask has one agent answer the user's message with the conversation so
// far. A model error, a timeout and a refusal are failures a CASCADE moves
// past.
func (s *Service) ask(ctx context.Context, a agents.Agent, r *run) answer {
	pr := s.promptFor(ctx, a, r)
	req := request(a, r, pr.system)
	// The id is made before the model is asked: a watcher's deltas name
	// the message they become.
	msgID := ids.New("msg")
	req.OnDelta = deltaSink(r.p.watch, msgID, a.Slug, r.drafts)
	c := s.callModel(ctx, a, r, req, pr, msgID)
	return s.answerFrom(ctx, a, r, pr, c)
}

// agentPrompt is what an agent is told before the conversation, and what
// of its context it was shown.
type agentPrompt struct {
	system string
	// tools are the tools offered (none when the turn offers none).
	tools []models.Tool
	// packs are the tool packs whose tools are among them (the skill's).
	packs []string
	// seen are the inbox messages the prompt shows (answer.seen).
	seen []string
	// memIDs are the memories of its memory context
	// (Message.ContextMemories).
	memIDs []string
}

// promptFor is agent a's system prompt: its identity, the handoff summary
// if the conversation was handed to it, its team and unread messages, the
// user profile, the team's shared memories and its own private ones, and
// last, nearest the conversation, the prompt and loaders of the skill
// that chose it. Everything read for it is read at once, first
// (ContextSources); a part that could not be read is logged and left out.
func (s *Service) promptFor(ctx context.Context, a agents.Agent, r *run) agentPrompt {
	sk, chosen := r.p.chosenSkill(a)
	pc := s.sources.Gather(ctx, r.p.Decision().TeamID, a.Slug, ContextParts{Inbox: true, Memory: true,
		RecentMemories: slices.Contains(sk.ContextLoaders, agents.LoaderRecentMemories),
		OpenTasks:      slices.Contains(sk.ContextLoaders, agents.LoaderOpenTasks), Person: r.p.conv.Owner})
	s.logUnread(ctx, a, sk, pc)
	var pr agentPrompt
	system := prompts.System(a, prompts.Chat{})
	if hs := handoffSummary(r.p.conv, a.Slug); hs != "" {
		system += "Handoff: " + hs + "\n"
	}
	if r.budget != nil {
		scoped := toolsOf(a, sk, chosen)
		pr.tools = s.tools.Specs(scoped)
		// The tool packs the skill names are as much its tools.
		if pt, ok := s.tools.(PackTools); ok {
			if pr.packs = scoped.Packs(); len(pr.packs) > 0 {
				pr.tools = pt.Augment(ctx, r.p.Decision().TeamID, scoped, pr.tools, pr.packs)
			}
		}
	}
	team, seen := teamBlock(r, a, pr.tools, pc.Inbox)
	system += team
	pr.seen = seen
	if pc.MemoryErr == nil {
		system += prompts.Memories(pc.Memory)
		pr.memIDs = pc.Memory.IDs()
	}
	if chosen {
		system += skillPrompt(r, a, sk, pc)
	}
	pr.system = system
	return pr
}

// logUnread logs each part of agent a's context that could not be read:
// it answers without it.
func (s *Service) logUnread(ctx context.Context, a agents.Agent, sk agents.Skill, pc PromptContext) {
	if pc.InboxErr != nil {
		s.log.WarnContext(ctx, "inbox unavailable; answering without it", "agent", a.Slug, "error", pc.InboxErr.Error())
	}
	if pc.MemoryErr != nil {
		s.log.WarnContext(ctx, "memory context unavailable; answering without it", "agent", a.Slug, "error", pc.MemoryErr.Error())
	}
	for _, l := range sk.ContextLoaders {
		var err error
		switch l {
		case agents.LoaderRecentMemories:
			err = pc.RecentMemoriesErr
		case agents.LoaderOpenTasks:
			err = pc.OpenTasksErr
		}
		if err != nil {
			s.log.WarnContext(ctx, "a skill's context loader failed; answering without it", "agent", a.Slug, "skill", sk.Name, "loader", l, "error", err.Error())
		}
	}
}

// request is the model request of agent a with the system prompt: the
// conversation so far (another agent's replies marked with its handle),
// then the user's message.
func request(a agents.Agent, r *run, system string) models.Request {
	d := r.p.Decision()
	req := prompts.Request(d.TeamID, a, system, MaxReplyTokens, d.Model)
	req.Metadata[models.MetadataConversationID] = r.p.conv.ID
	for _, m := range r.history {
		switch m.Role {
		case AuthorUser:
			req.Messages = append(req.Messages, models.Message{Role: "user", Content: m.Content})
		case AuthorAssistant:
			content := m.Content
			if m.Agent != a.Slug {
				// Another agent's reply: the model sees who said it.
				content = "[" + m.Agent + "] " + content
			}
			req.Messages = append(req.Messages, models.Message{Role: "assistant", Content: content})
		}
	}
	req.Messages = append(req.Messages, models.Message{Role: "user", Content: r.user.Content})
	return req
}

// call is one agent's model call as it ended.
type call struct {
	msgID string
	resp  models.Response
	err   error
	lat   int64
	// lp is the tool loop the call ran in; nil when no tool was offered.
	lp *loop
}

// callModel asks the model, through the tool loop when the turn offers
// tools and a has some (pr.tools; with none offered the loop would make
// the one call Converse makes and answer its reply).
func (s *Service) callModel(ctx context.Context, a agents.Agent, r *run, req models.Request, pr agentPrompt, msgID string) call {
	c := call{msgID: msgID}
	if r.budget != nil {
		if req.Tools = pr.tools; len(req.Tools) > 0 {
			d := r.p.Decision()
			c.lp = &loop{s: s, a: a, budget: r.budget, byslug: r.byslug, conv: r.p.conv, returning: r.returning, watch: r.p.watch, msgID: msgID,
				caller: ToolCaller{TeamID: d.TeamID, ConversationID: r.p.conv.ID, Agent: a.Slug, Skills: a.Skills, WaitUntil: deadline(ctx).Add(-toolAnswerReserve), Offered: req.Tools, Packs: pr.packs}}
		}
	}
	start := time.Now()
	if c.lp != nil {
		c.resp, c.err = c.lp.converse(ctx, req)
	} else {
		c.resp, c.err = s.model.Converse(ctx, req)
	}
	c.lat = time.Since(start).Milliseconds()
	return c
}

// attemptOf is the call as the routing decision records it.
func attemptOf(ctx context.Context, agent string, c call) cascade.Attempt {
	att := cascade.Attempt{Agent: agent, LatencyMS: c.lat}
	if c.err == nil {
		att.CostUSD = models.Cost(c.resp.ModelID, c.resp.InputTokens, c.resp.OutputTokens)
		if c.lp != nil {
			// Each of the loop's model calls at its own model, and what
			// its tools' own model calls cost (a bridging tool's).
			att.CostUSD = c.lp.cost
		}
	}
	switch {
	case c.err != nil && (errors.Is(c.err, context.DeadlineExceeded) || ctx.Err() != nil):
		att.Outcome, att.Error = cascade.OutcomeTimedOut, "no answer before the deadline"
	case c.err != nil:
		att.Outcome, att.Error = cascade.OutcomeFailed, c.err.Error()
	case c.resp.Refused || strings.TrimSpace(c.resp.Text) == "":
		att.Outcome, att.Error = cascade.OutcomeRefused, "the model declined to answer"
	default:
		att.Outcome = cascade.OutcomeAnswered
	}
	return att
}

// answerFrom is agent a's answer: the attempt, and the reply when it
// answered, with what its tool loop did.
func (s *Service) answerFrom(ctx context.Context, a agents.Agent, r *run, pr agentPrompt, c call) answer {
	att := attemptOf(ctx, a.Slug, c)
	ans := answer{agent: a, attempt: att, resp: c.resp, seen: pr.seen}
	if errors.Is(c.err, models.ErrBudgetExhausted) {
		ans.refused = c.err
	}
	if lp := c.lp; lp != nil {
		// A warning only: its condition's mutants change a log line.
		if len(lp.pending) > 0 && att.Outcome != cascade.OutcomeAnswered {
			// The work goes on; its result will be posted in the
			// conversation even though this agent gave no reply.
			s.log.WarnContext(ctx, "an agent that started work gave no reply", "agent", a.Slug, "pending", len(lp.pending))
		}
		ans.handoff, ans.delivered = lp.handoff, lp.delivered
	}
	if att.Outcome != cascade.OutcomeAnswered {
		return ans
	}
	d, user, resp := r.p.Decision(), r.user, c.resp
	ans.msg = Message{
		ID: c.msgID, ConversationID: user.ConversationID, Role: AuthorAssistant, Agent: a.Slug, Content: resp.Text,
		CreatedAt: time.Now().UTC(), ReplyTo: user.ID, DecisionID: d.ID, Strategy: string(d.Strategy), ModelID: resp.ModelID,
		InputTokens: resp.InputTokens, OutputTokens: resp.OutputTokens, CostUSD: att.CostUSD, LatencyMS: c.lat, Query: clip.Clip(user.Content, 500),
		ContextMemories: pr.memIDs,
	}
	if lp := c.lp; lp != nil {
		ans.msg.ToolCalls, ans.msg.Pending, ans.msg.Stopped = lp.uses, lp.pending, lp.stopped
		ans.msg.Content = pendingNote(ans.msg.Content, lp.pending)
	}
	return ans
}

// toolsOf is the agent whose tools a reply is offered: a skill's tools
// belong to it (seed 003), so an agent a skill chose is offered that
// skill's declared tools and the tools of its packs (and the
// collaboration tools every agent has); one chosen otherwise (a mention,
// continuity, the default) has all its skills' tools and packs.
func toolsOf(a agents.Agent, sk agents.Skill, chosen bool) agents.Agent {
	if !chosen {
		return a
	}
	scoped, _ := a.WithSkill(sk.Name)
	return scoped
}
