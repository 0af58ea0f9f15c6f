package conversations

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// The kinds of work a conversation starts (WorkEntry.Type; WorkRef's
// "task", "report" and "session" are the same words).
const (
	WorkTask         = "task"
	WorkSession      = "session"
	WorkPlan         = "plan"
	WorkReport       = "report"
	WorkConsultation = "consultation"
)

// MaxWorkLabel is the most characters of a WorkEntry's label: a plan's
// message or a consultation's question is clipped to it.
const MaxWorkLabel = 200

// WorkEntry is one piece of work a conversation started, as a chat client
// lists it: a task (delegated from a reply, or created with the
// conversation's id, its sub-tasks included: they inherit it), a
// collaboration session, a compound plan, a report or a consultation.
type WorkEntry struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Status string `json:"status"`
	// Agent is who does the work: a task's assignee, a session's or a
	// plan's lead, a report's author (to), a consultation's specialist.
	Agent string `json:"agent"`
	// Label says what it is about in a line: a task's or report's title,
	// a session's goal, a plan's message or a consultation's question
	// (clipped to MaxWorkLabel).
	Label     string    `json:"label"`
	CreatedAt time.Time `json:"created_at"`
}

// WorkLister reads the work conversations started, each the work of its
// own items' stores (tasks, sessions, plans, reports, consultations).
type WorkLister interface {
	// ListWork returns a page of the work conversation convID of the
	// team started, newest first: a report's own task is left out (the
	// report stands for it). An unknown conversation, or another team's,
	// has none.
	ListWork(ctx context.Context, teamID, convID string, p paging.Page) ([]WorkEntry, string, error)
}

// noWork lists no work: without a WorkLister the listing is a server
// fault, not a client's.
type noWork struct{}

func (noWork) ListWork(context.Context, string, string, paging.Page) ([]WorkEntry, string, error) {
	return nil, "", apperr.New(apperr.EINTERNAL, "the work listing is not wired")
}

// Work returns a page of the work a conversation started, newest first
// (WorkLister.ListWork). Returns ENOTFOUND (a conversation the team does
// not have), EINVALID (limit, next_token).
func (s *Service) Work(ctx context.Context, teamID, id string, p paging.Page) ([]WorkEntry, string, error) {
	p, err := p.Normalize()
	if err != nil {
		return nil, "", err
	}
	if !ids.Valid("conv", id) {
		return nil, "", apperr.NotFound("conversation", id)
	}
	if err := s.mine(ctx, teamID, id); err != nil {
		return nil, "", err
	}
	list, next, err := s.work.ListWork(ctx, teamID, id, p)
	if err == nil && len(list) == 0 {
		// Only an empty page needs the conversation read, for a 404: a
		// listed entry is under the team's own index partition.
		_, err = s.store.GetConversation(ctx, teamID, id)
	}
	if err != nil {
		return nil, "", err
	}
	return list, next, nil
}

// AgentConversations returns a page of the conversations agent took part
// in (it answered in them, or was added or handed them; removed since or
// not), newest first. An agent the team does not have took part in none.
// A member sees their own only: a page may then hold fewer than its limit
// and still have a next token. Returns EINVALID (agent not a slug, limit,
// next_token).
func (s *Service) AgentConversations(ctx context.Context, teamID, agent string, p paging.Page) ([]Conversation, string, error) {
	if !agents.ValidSlug(agent) {
		return nil, "", apperr.Invalid("agent", "agent must be an agent slug")
	}
	p, err := p.Normalize()
	if err != nil {
		return nil, "", err
	}
	list, next, err := s.store.ListAgentConversations(ctx, teamID, agent, p)
	if err != nil {
		return nil, "", err
	}
	mine := []Conversation{}
	for _, c := range list {
		if Visible(ctx, c) {
			mine = append(mine, c)
		}
	}
	return mine, next, nil
}
