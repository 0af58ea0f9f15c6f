package conversations

import (
	"context"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/team/prompts"
)

// Inboxes brings the unread messages addressed to an agent into its
// reply's context (messaging.Service implements it). Unread is read per
// agent asked (one Query); Acknowledge marks what a committed turn's
// replies saw (one write per agent whose reply was kept).
type Inboxes interface {
	Unread(ctx context.Context, teamID, agent string) ([]messaging.Message, error)
	Acknowledge(ctx context.Context, teamID, agent string, ids []string) (int, error)
}

// teamBlock is agent a's roster and inbox summary (prompts.TeamBlock) and
// the ids of the messages it shows. The roster is the turn's active agents
// (read before routing) with the gate's loads: nothing is read for it. An
// inbox that cannot be read is left out, and the agent answers without it.
func (s *Service) teamBlock(ctx context.Context, r *run, a agents.Agent, tools []models.Tool) (string, []string) {
	t := prompts.Team{Self: a.Slug, Query: r.user.Content, Tools: tools}
	for _, x := range r.byslug {
		t.Agents = append(t.Agents, x)
	}
	// No loads (>= 0: an empty map) shows no counts either way.
	if loads := r.p.Loads; len(loads) > 0 {
		t.ActiveTasks = map[string]int{}
		for slug, l := range loads {
			t.ActiveTasks[slug] = l.ActiveTasks
		}
	}
	if s.Inbox != nil {
		var err error
		if t.Inbox, err = s.Inbox.Unread(ctx, r.p.Decision().TeamID, a.Slug); err != nil {
			s.log().WarnContext(ctx, "inbox unavailable; answering without it", "agent", a.Slug, "error", err.Error())
		}
	}
	return prompts.TeamBlock(t)
}

// seenBy is, per agent whose reply the turn kept, the inbox messages its
// context showed: they are marked read once the turn is committed. An
// agent whose reply was not kept (it failed, or another's was) saw them
// in a reply nobody will read: they stay unread.
func (o outcome) seenBy() map[string][]string {
	out := map[string][]string{}
	for i, ids := range o.seen {
		// Without ids (>= 0) an agent is acknowledged nothing: no write.
		if o.attempts[i].Kept && len(ids) > 0 {
			out[o.attempts[i].Agent] = append(out[o.attempts[i].Agent], ids...)
		}
	}
	return out
}

// acknowledge marks read the messages the committed turn's replies saw,
// within the answer's time. A failure is logged and loses nothing: the
// messages stay unread and are shown again in the agent's next context.
func (s *Service) acknowledge(ctx context.Context, teamID string, out outcome) {
	seen := out.seenBy()
	if s.Inbox == nil || len(seen) == 0 {
		return
	}
	actx, cancel := s.commitContext(ctx)
	defer cancel()
	for agent, ids := range seen {
		if _, err := s.Inbox.Acknowledge(actx, teamID, agent, ids); err != nil {
			s.log().WarnContext(ctx, "marking the inbox messages a reply saw read failed; they will be shown again", "agent", agent, "messages", ids, "error", err.Error())
		}
	}
}
