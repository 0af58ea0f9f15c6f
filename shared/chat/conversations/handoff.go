package conversations

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/prompts"
)

// Limits of a handoff.
const (
	MaxReason  = 500
	MaxSummary = 4000
)

// HandoffMemories builds the episodic memory a handoff or return writes
// with its commit (memory.Service implements it).
type HandoffMemories interface {
	New(author string, in memory.CreateInput, source string) (memory.Memory, error)
}

// Publisher announces events.
type Publisher interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// HandoffInput is the body of POST /v1/conversations/{id}/handoff.
type HandoffInput struct {
	From           string `json:"from"`
	To             string `json:"to"`
	Reason         string `json:"reason"`
	ContextSummary string `json:"context_summary"`
}

// Handoff moves the conversation from its current agent to another: the
// record, a note in the conversation, the previous agent becomes a
// handoff_source participant, a shared episodic memory ("Kyra handed off to
// Luke because …") visible to both, and the next replies come from the new
// agent. Returns EINVALID, ENOTFOUND, ECONFLICT, EUNAVAILABLE (too little
// time left to commit; nothing stored).
func (s *Service) Handoff(ctx context.Context, teamID, convID string, in HandoffInput) (Handoff, error) {
	in.Reason, in.ContextSummary = strings.TrimSpace(in.Reason), strings.TrimSpace(in.ContextSummary)
	if n := utf8.RuneCountInString(in.Reason); n == 0 || n > MaxReason {
		return Handoff{}, apperr.Invalid("reason", "reason must be 1 to %d characters", MaxReason)
	}
	if utf8.RuneCountInString(in.ContextSummary) > MaxSummary {
		return Handoff{}, apperr.Invalid("context_summary", "context_summary must be at most %d characters", MaxSummary)
	}
	if in.To == "" {
		return Handoff{}, apperr.Invalid("to", "to (the agent taking over) is required")
	}
	return s.transfer(ctx, teamID, convID, func(c Conversation) (string, string, string, string, error) {
		from := c.CurrentAgent
		if from == "" {
			return "", "", "", "", apperr.New(apperr.ECONFLICT, "the conversation has no current agent to hand off from").WithReason("NoCurrentAgent")
		}
		if in.From != "" && in.From != from {
			return "", "", "", "", apperr.New(apperr.ECONFLICT, "only the current agent (%s) can hand off", from).WithReason("NotCurrentAgent").WithDetail("current_agent", from)
		}
		if in.To == from {
			return "", "", "", "", apperr.Invalid("to", "the conversation is already with %s", from)
		}
		return from, in.To, in.Reason, in.ContextSummary, nil
	}, KindHandoff)
}

// Return gives the conversation back to the agent before the last handoff.
// Returns ENOTFOUND, ECONFLICT (nothing to return to), EUNAVAILABLE (too
// little time left to commit; nothing stored).
func (s *Service) Return(ctx context.Context, teamID, convID string) (Handoff, error) {
	return s.transfer(ctx, teamID, convID, func(c Conversation) (string, string, string, string, error) {
		if c.PreviousAgent == "" || c.PreviousAgent == c.CurrentAgent {
			return "", "", "", "", apperr.New(apperr.ECONFLICT, "there is no previous agent to return to").WithReason("NoPreviousAgent")
		}
		return c.CurrentAgent, c.PreviousAgent, "return to the previous agent", lastSummary(c), nil
	}, KindReturn)
}

type pick func(c Conversation) (from, to, reason, summary string, err error)

func (s *Service) transfer(ctx context.Context, teamID, convID string, choose pick, kind string) (Handoff, error) {
	for attempt := 0; ; attempt++ {
		c, err := s.store.GetConversation(ctx, teamID, convID)
		if err != nil {
			return Handoff{}, err
		}
		if !Visible(ctx, c) {
			return Handoff{}, apperr.NotFound("conversation", convID)
		}
		if c.Status != StatusOpen {
			return Handoff{}, apperr.New(apperr.ECONFLICT, "conversation is closed").WithReason("ConversationClosed")
		}
		from, to, reason, summary, err := choose(c)
		if err != nil {
			return Handoff{}, err
		}
		fromAgent, err := s.agents.GetAgent(ctx, teamID, from)
		if err != nil {
			return Handoff{}, err
		}
		toAgent, err := s.activeAgent(ctx, teamID, to, "to")
		if err != nil {
			return Handoff{}, err
		}
		h, err := s.newHandover(c, fromAgent, toAgent, kind, reason, summary)
		if err != nil {
			return Handoff{}, err
		}
		ch := h.change(c)
		// The commit is the last step, attempted only with time to finish
		// and answer (deadline.go), as a turn's.
		if !timeLeft(ctx, s.commitReserve) {
			return Handoff{}, tooLate(kind)
		}
		cctx, cancel := s.commitContext(ctx)
		err = s.store.CommitHandoff(cctx, teamID, ch)
		cut := commitCut(cctx, err)
		cancel()
		if cut {
			s.log.ErrorContext(ctx, "handoff commit cut off by the deadline; outcome unknown", "conversation_id", convID, "error", err.Error())
			return Handoff{}, unknownOutcome(kind, err)
		}
		if errors.Is(err, ErrChanged) && attempt < maxCommitAttempts-1 {
			continue
		}
		if err != nil {
			return Handoff{}, err
		}
		effects := []effect{s.handoffPublished(teamID, ch.Handoff)}
		if kind == KindHandoff {
			effects = append(effects, s.handoffCorrection(teamID, convID, ch.Handoff))
		}
		s.afterCommit(ctx, false, effects...)
		return ch.Handoff, nil
	}
}

// handover is one handoff or return. newHandover builds it whichever way
// it was asked for (POST …/handoff, POST …/return, or "@kyra" in a chat
// turn), so every path writes the same: the record, the system note, the
// participants' roles, the episodic memory, and (apply) the conversation's
// fields; every path publishes HandoffCompleted (handoffPublished) once
// it is committed.
type handover struct {
	handoff Handoff
	note    Message
	roles   []Participant
	memory  *memory.Memory
}

// newHandover builds the handoff of c from one agent to another.
func (s *Service) newHandover(c Conversation, from, to agents.Agent, kind, reason, summary string) (handover, error) {
	now := s.now.UTC()
	h := handover{handoff: Handoff{ID: ids.New("hoff"), ConversationID: c.ID, From: from.Slug, To: to.Slug, Kind: kind, Reason: reason, ContextSummary: summary, CreatedAt: now}}
	verb := "handed off to"
	if kind == KindReturn {
		verb = "handed the conversation back to"
	}
	text := fmt.Sprintf("%s %s %s because %s", from.Name, verb, to.Name, reason)
	if summary != "" {
		text += ". Summary: " + summary
	}
	if s.memories != nil {
		m, err := s.memories.New(from.Slug, memory.CreateInput{Type: "episodic", Visibility: memory.Private, Content: clip.Clip(text, memory.MaxContent)}, "handoff")
		if err != nil {
			return handover{}, err
		}
		// Visible to both agents of the handoff, not the whole team.
		m.Agents, m.TeamID = []string{to.Slug}, c.TeamID
		h.memory = &m
		h.handoff.MemoryID = m.ID
	}
	h.note = Message{ID: ids.New("msg"), ConversationID: c.ID, Role: AuthorSystem, Content: text + ".", CreatedAt: now}
	toRole := RoleInvited
	if to.Slug == c.PrimaryAgent {
		toRole = RolePrimary
	}
	h.roles = []Participant{
		{Agent: from.Slug, Role: RoleHandoffSource, JoinedAt: now, SetRole: true},
		{Agent: to.Slug, Role: toRole, JoinedAt: now, SetRole: true},
	}
	return h, nil
}

// apply sets what the handoff changes on a conversation: the new agent
// answers (without routing) until the next handoff, return or mention,
// and a return goes back to the agent it came from.
func (h handover) apply(c Conversation) Conversation {
	last := h.handoff
	c.CurrentAgent, c.PreviousAgent, c.HandoffActive, c.LastHandoff = h.handoff.To, h.handoff.From, true, &last
	return c
}

// change is the handover committed on its own (POST …/handoff, POST
// …/return): the conversation c moves on one version with the note.
func (h handover) change(c Conversation) HandoffChange {
	next := h.apply(c)
	next.Version++
	next.UpdatedAt = h.handoff.CreatedAt
	next.MessageCount++
	next.EventSeq++ // the note's MessagePosted
	return HandoffChange{Conversation: next, PrevCurrent: c.CurrentAgent, Handoff: h.handoff, Note: h.note, Roles: h.roles, Memory: h.memory}
}

// lastSummary is what a return passes back: the summary of the handoff it
// undoes.
func lastSummary(c Conversation) string {
	if c.LastHandoff == nil {
		return ""
	}
	return c.LastHandoff.ContextSummary
}

// Handoffs lists a conversation's handoffs, oldest first. Returns ENOTFOUND.
func (s *Service) Handoffs(ctx context.Context, teamID, convID string) ([]Handoff, error) {
	if err := s.mine(ctx, teamID, convID); err != nil {
		return nil, err
	}
	list, err := s.store.ListHandoffs(ctx, teamID, convID)
	if err == nil && len(list) == 0 {
		// Only an empty list needs the conversation read, for a 404.
		_, err = s.store.GetConversation(ctx, teamID, convID)
	}
	if err != nil {
		return nil, err
	}
	return list, nil
}

// AgentsInput is the body of POST /v1/conversations/{id}/agents.
type AgentsInput struct {
	Add    []string `json:"add"`
	Remove []string `json:"remove"`
}

// SetAgents adds agents to (as invited participants) and removes agents
// from a conversation. The current agent cannot be removed (hand off
// first). Returns EINVALID, ENOTFOUND, ECONFLICT.
func (s *Service) SetAgents(ctx context.Context, teamID, convID string, in AgentsInput) (Conversation, error) {
	if len(in.Add)+len(in.Remove) == 0 || len(in.Add)+len(in.Remove) > 20 {
		return Conversation{}, apperr.Invalid("add", "give 1 to 20 agents to add or remove")
	}
	c, err := s.store.GetConversation(ctx, teamID, convID)
	if err != nil {
		return Conversation{}, err
	}
	if !Visible(ctx, c) {
		return Conversation{}, apperr.NotFound("conversation", convID)
	}
	if c.Status != StatusOpen {
		return Conversation{}, apperr.New(apperr.ECONFLICT, "conversation is closed").WithReason("ConversationClosed")
	}
	now := s.now.UTC()
	seen := map[string]bool{}
	var add []Participant
	for _, slug := range in.Add {
		if seen[slug] {
			return Conversation{}, apperr.Invalid("add", "agent %q is listed twice", slug)
		}
		seen[slug] = true
		if _, err := s.activeAgent(ctx, teamID, slug, "add"); err != nil {
			return Conversation{}, err
		}
		add = append(add, Participant{Agent: slug, Role: RoleInvited, JoinedAt: now})
	}
	for _, slug := range in.Remove {
		if seen[slug] {
			return Conversation{}, apperr.Invalid("remove", "agent %q is listed twice", slug)
		}
		seen[slug] = true
		if slug == c.CurrentAgent {
			return Conversation{}, apperr.New(apperr.ECONFLICT, "%s is answering this conversation; hand it off first", slug).WithReason("CurrentAgent")
		}
	}
	if err := s.store.SetParticipants(ctx, teamID, convID, add, in.Remove, now); err != nil {
		return Conversation{}, err
	}
	return s.Get(ctx, teamID, convID)
}

// AgentContext is what an agent sees when it answers in a conversation.
type AgentContext struct {
	Agent          string         `json:"agent"`
	Identity       string         `json:"identity"`
	History        []Message      `json:"history"`
	HandoffSummary string         `json:"handoff_summary,omitempty"`
	Memories       memory.Context `json:"memories"`
}

// ContextFor returns the context an agent would answer with now. Returns
// ENOTFOUND.
func (s *Service) ContextFor(ctx context.Context, teamID, convID, slug string) (AgentContext, error) {
	c, err := s.store.GetConversation(ctx, teamID, convID)
	if err != nil {
		return AgentContext{}, err
	}
	if !Visible(ctx, c) {
		return AgentContext{}, apperr.NotFound("conversation", convID)
	}
	if !agents.ValidSlug(slug) {
		return AgentContext{}, apperr.NotFound("agent", slug)
	}
	a, err := s.agents.GetAgent(ctx, teamID, slug)
	if err != nil {
		return AgentContext{}, err
	}
	history, err := s.store.RecentMessages(ctx, teamID, convID, HistoryLimit)
	if err != nil {
		return AgentContext{}, err
	}
	// The memory context as the agent's prompt reads it (context.go); an
	// unreadable one fails the request instead of being left out.
	pc := s.sources.Gather(ctx, teamID, slug, ContextParts{Memory: true, Person: c.Owner})
	if pc.MemoryErr != nil {
		return AgentContext{}, pc.MemoryErr
	}
	return AgentContext{Agent: slug, Identity: prompts.System(a, prompts.Chat{}), History: history, HandoffSummary: handoffSummary(c, slug), Memories: pc.Memory}, nil
}

// handoffSummary is the last handoff's summary when it was to this agent.
func handoffSummary(c Conversation, slug string) string {
	h := c.LastHandoff
	if h == nil || h.To != slug {
		return ""
	}
	s := fmt.Sprintf("%s handed this conversation to you (%s).", h.From, h.Reason)
	if h.ContextSummary != "" {
		s += " Summary: " + h.ContextSummary
	}
	return s
}
