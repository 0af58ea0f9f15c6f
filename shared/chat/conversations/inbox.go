package conversations

import (
	"context"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/team/prompts"
)

// An agent's unread messages are part of its reply's context: read with
// the rest of it (ContextSources, one Query per agent asked) and marked
// read once the turn that kept its reply commits (Inboxes, one write per
// agent whose reply was kept; inboxRead, effects.go).

// Inboxes marks read the inbox messages a committed turn's kept replies
// were shown (messaging.Service implements it).
type Inboxes interface {
	Acknowledge(ctx context.Context, teamID, agent string, ids []string) (int, error)
}

// teamBlock is agent a's roster and inbox summary (prompts.TeamBlock) and
// the ids of the messages it shows. The roster is the turn's active agents
// (read before routing) with the gate's loads: nothing is read for it.
func teamBlock(r *run, a agents.Agent, tools []models.Tool, inbox []messaging.Message) (string, []string) {
	t := prompts.Team{Self: a.Slug, Query: r.user.Content, Tools: tools, Inbox: inbox}
	for _, x := range r.byslug {
		t.Agents = append(t.Agents, x)
	}
	// No loads (>= 0: none) shows no counts either way.
	if loads := r.p.Loads; loads.Len() > 0 {
		t.ActiveTasks = map[string]int{}
		for slug, l := range loads.All() {
			t.ActiveTasks[slug] = l.ActiveTasks
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
