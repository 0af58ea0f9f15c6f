package conversations

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/clock"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// Limits of the chat API.
const (
	MaxContent = 8000
	MaxTitle   = 200
	MaxComment = 1000
	// HistoryLimit is how many earlier messages an agent sees: the whole
	// of a normal conversation, bounded so a prompt stays within budget.
	HistoryLimit = 50
	// DefaultBudget is the time a turn may spend on model calls: below API
	// Gateway's 30 s with room to commit (the function times out at 29 s).
	// The models also stop 2 × the commit reserve before the context's
	// deadline, whichever comes first (deadline.go).
	DefaultBudget = 24 * time.Second
)

// AgentDirectory is what chat needs from the agents.
type AgentDirectory interface {
	GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error)
	ActiveAgents(ctx context.Context, teamID string) ([]agents.Agent, error)
	DefaultAgent(ctx context.Context, teamID string) (string, error)
}

// Service implements conversations and chat. It is built by New from a
// Config; its parts are fixed from then on.
type Service struct {
	store   Store
	agents  AgentDirectory
	router  *cascade.Router
	planner Planner
	// model is nil when the service answers no turn (Config.Model).
	model models.Model
	// synth is nil when ENSEMBLE replies are merged deterministically
	// (routing.Aggregate decides).
	synth *routing.Synthesizer
	// tools is nil when replies have no tools (execute decides).
	tools   Tools
	sources ContextSources
	inbox   Inboxes
	// memories is nil when handoffs write no memory (newHandover).
	memories         HandoffMemories
	bus              Publisher
	results          ResultPoster
	reportParameters func(reportType, message string) map[string]any
	tail             MessageTail
	replays          Replays
	work             WorkLister
	budget           time.Duration
	commitReserve    time.Duration
	now              clock.Func
	log              *slog.Logger
}

// CreateInput is the body of POST /v1/conversations.
type CreateInput struct {
	Title string `json:"title"`
	Agent string `json:"agent"`
}

// Create starts a conversation, optionally with a primary agent (which must
// be active), owned by ctx's person (none for a key's own request).
// Returns EINVALID, ENOTFOUND, ECONFLICT.
func (s *Service) Create(ctx context.Context, teamID string, in CreateInput) (Conversation, error) {
	in.Title = strings.TrimSpace(in.Title)
	if utf8.RuneCountInString(in.Title) > MaxTitle {
		return Conversation{}, apperr.Invalid("title", "title must be at most %d characters", MaxTitle)
	}
	now := s.now.UTC()
	c := Conversation{ID: ids.New("conv"), TeamID: teamID, Title: in.Title, Owner: authctx.CallerOf(ctx).UserID, Status: StatusOpen, Version: 1, CreatedAt: now, UpdatedAt: now}
	var primary *Participant
	if in.Agent != "" {
		a, err := s.activeAgent(ctx, teamID, in.Agent, "agent")
		if err != nil {
			return Conversation{}, err
		}
		c.PrimaryAgent, c.CurrentAgent = a.Slug, a.Slug
		primary = &Participant{Agent: a.Slug, Role: RolePrimary, JoinedAt: now}
		c.Participants = []Participant{*primary}
	}
	if err := s.store.CreateConversation(ctx, c, primary); err != nil {
		return Conversation{}, err
	}
	return c, nil
}

func (s *Service) activeAgent(ctx context.Context, teamID, slug, field string) (agents.Agent, error) {
	if !agents.ValidSlug(slug) {
		return agents.Agent{}, apperr.NotFound("agent", slug)
	}
	a, err := s.agents.GetAgent(ctx, teamID, slug)
	if err != nil {
		return agents.Agent{}, err
	}
	if a.Status != agents.StatusActive {
		return agents.Agent{}, apperr.New(apperr.ECONFLICT, "agent %q is %s", slug, a.Status).WithReason("AgentUnavailable").WithDetail("status", a.Status)
	}
	return a, nil
}

// Get returns a conversation with its participants. Returns ENOTFOUND
// (another person's too, to a member).
func (s *Service) Get(ctx context.Context, teamID, id string) (Conversation, error) {
	c, err := s.store.GetConversation(ctx, teamID, id)
	if err != nil {
		return Conversation{}, err
	}
	if !Visible(ctx, c) {
		return Conversation{}, apperr.NotFound("conversation", id)
	}
	if c.Participants, err = s.store.ListParticipants(ctx, teamID, id); err != nil {
		return Conversation{}, err
	}
	return c, nil
}

// List returns a page of the team's conversations, newest first: owner's
// only when owner is set, and a member's own whatever it is (listOwner).
// Returns EINVALID (owner, limit, next_token), EFORBIDDEN.
func (s *Service) List(ctx context.Context, teamID, owner string, p paging.Page) ([]Conversation, string, error) {
	p, err := p.Normalize()
	if err != nil {
		return nil, "", err
	}
	if owner, err = listOwner(ctx, owner); err != nil {
		return nil, "", err
	}
	return s.store.ListConversations(ctx, teamID, owner, p)
}

// Messages returns a page of a conversation's messages, oldest first.
// Returns ENOTFOUND.
func (s *Service) Messages(ctx context.Context, teamID, id string, p paging.Page) ([]Message, string, error) {
	p, err := p.Normalize()
	if err != nil {
		return nil, "", err
	}
	if err := s.mine(ctx, teamID, id); err != nil {
		return nil, "", err
	}
	list, next, err := s.store.ListMessages(ctx, teamID, id, p)
	if err == nil && len(list) == 0 {
		// Only an empty page needs the conversation read, for a 404.
		_, err = s.store.GetConversation(ctx, teamID, id)
	}
	if err != nil {
		return nil, "", err
	}
	return list, next, nil
}

// Close ends a conversation; its agent no longer counts it as active.
// A write that lands between the read and the close (a task's result
// posted into it, a turn's after-commit update) is no reason to refuse the
// caller: the close is tried again on a fresh read, as a turn's commit is.
// Returns ENOTFOUND, ECONFLICT (already closed, or changed on every try).
func (s *Service) Close(ctx context.Context, teamID, id string) (Conversation, error) {
	if err := s.mine(ctx, teamID, id); err != nil {
		return Conversation{}, err
	}
	for attempt := 0; ; attempt++ {
		c, err := s.store.GetConversation(ctx, teamID, id)
		if err != nil {
			return Conversation{}, err
		}
		if c.Status == StatusClosed {
			return Conversation{}, apperr.New(apperr.ECONFLICT, "conversation is already closed").WithReason("ConversationClosed")
		}
		now := s.now.UTC()
		err = s.store.CloseConversation(ctx, teamID, c, now)
		if errors.Is(err, ErrChanged) && attempt < maxCommitAttempts-1 {
			continue
		}
		if err != nil {
			return Conversation{}, err
		}
		c.Status, c.UpdatedAt, c.Version = StatusClosed, now, c.Version+1
		return c, nil
	}
}

// RateInput is the body of the feedback endpoint.
type RateInput struct {
	Rating  int    `json:"rating"`
	Comment string `json:"comment"`
}

// Rate records a 1–5 rating of an agent's reply (a later rating replaces an
// earlier one). Returns EINVALID, ENOTFOUND.
func (s *Service) Rate(ctx context.Context, teamID, convID, msgID string, in RateInput) (Feedback, error) {
	if in.Rating < 1 || in.Rating > 5 {
		return Feedback{}, apperr.Invalid("rating", "rating must be an integer from 1 to 5")
	}
	if utf8.RuneCountInString(in.Comment) > MaxComment {
		return Feedback{}, apperr.Invalid("comment", "comment must be at most %d characters", MaxComment)
	}
	if err := s.mine(ctx, teamID, convID); err != nil {
		return Feedback{}, err
	}
	// A message is stored under its conversation: finding it proves the
	// conversation exists; only a miss reads the conversation, to say
	// which of the two is not found.
	m, err := s.store.GetMessage(ctx, teamID, convID, msgID)
	if apperr.Is(err, apperr.ENOTFOUND) {
		if _, cerr := s.store.GetConversation(ctx, teamID, convID); cerr != nil {
			return Feedback{}, cerr
		}
	}
	if err != nil {
		return Feedback{}, err
	}
	if m.Role != AuthorAssistant {
		return Feedback{}, apperr.Invalid("message_id", "only agent replies can be rated; this is a %s message", m.Role)
	}
	f := Feedback{ConversationID: convID, MessageID: msgID, Rating: in.Rating, Comment: strings.TrimSpace(in.Comment), Agents: m.Contributors, Query: m.Query, RatedAt: s.now.UTC(),
		UserID: authctx.CallerOf(ctx).UserID}
	if len(f.Agents) == 0 {
		f.Agents = []string{m.Agent}
	}
	if err := s.store.RateMessage(ctx, teamID, f); err != nil {
		return Feedback{}, err
	}
	return f, nil
}
