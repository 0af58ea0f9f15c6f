package agenttools

import (
	"context"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/tools/catalog"
	"github.com/conclave-ai/conclave/shared/work/worker"
)

// AgentReader reads one agent of a team (the agent store).
type AgentReader interface {
	// GetAgent returns ENOTFOUND for an agent the team does not have.
	GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error)
}

// Lister answers GET /v1/agents/{slug}/tools: the tools an agent's model
// receives in a chat reply or working on a task, from the very Specs the
// chat (conversations.Config.Tools) and the worker (worker.Worker.Tools)
// put in the model request, so the answer cannot drift from it.
type Lister struct {
	Agents AgentReader
	Chat   conversations.Tools
	Task   worker.Tools
}

// Offered returns the tools agent slug of the team receives in where
// (catalog.ContextChat or ContextTask; "" is chat): when its skill named
// skill answered (a skill's tools belong to it), or, with skill "", when
// it answers without a skill match (every skill's tools). Returns EINVALID
// (context; skill, one the agent does not have), ENOTFOUND (an agent the
// team does not have).
func (l Lister) Offered(ctx context.Context, teamID, slug, where, skill string) (catalog.Offered, error) {
	if where == "" {
		where = catalog.ContextChat
	}
	if where != catalog.ContextChat && where != catalog.ContextTask {
		return catalog.Offered{}, apperr.Invalid("context", "context must be %s or %s", catalog.ContextChat, catalog.ContextTask)
	}
	if !agents.ValidSlug(slug) {
		return catalog.Offered{}, apperr.NotFound("agent", slug)
	}
	a, err := l.Agents.GetAgent(ctx, teamID, slug)
	if err != nil {
		return catalog.Offered{}, err
	}
	if skill != "" {
		var ok bool
		if a, ok = a.WithSkill(skill); !ok {
			return catalog.Offered{}, apperr.Invalid("skill", "agent %s has no skill %q", slug, skill)
		}
	}
	var specs []models.Tool
	switch {
	case where == catalog.ContextChat && l.Chat != nil:
		specs = l.Chat.Specs(a)
		if pt, ok := l.Chat.(conversations.PackTools); ok {
			// And the tools of the packs its skills name, as a reply has.
			specs = pt.Augment(ctx, teamID, a, specs, a.Packs())
		}
	case where == catalog.ContextTask && l.Task != nil:
		specs = l.Task.Specs(a)
	}
	out := catalog.Offered{Agent: a.Slug, Context: where, Skill: skill, Tools: []catalog.OfferedTool{}}
	for _, s := range specs {
		out.Tools = append(out.Tools, catalog.OfferedTool{Name: s.Name, Description: s.Description, InputSchema: s.InputSchema()})
	}
	return out, nil
}
