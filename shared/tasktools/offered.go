package tasktools

import (
	"context"

	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/toolset"
	"github.com/conclave-ai/conclave/shared/worker"
)

// AgentReader reads one agent of a team (the agent store).
type AgentReader interface {
	// GetAgent returns ENOTFOUND for an agent the team does not have.
	GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error)
}

// Lister answers GET /v1/agents/{slug}/tools: the tools an agent's model
// receives in a chat reply or working on a task, from the very Specs the
// chat (conversations.Service.Tools) and the worker (worker.Worker.Tools)
// put in the model request, so the answer cannot drift from it.
type Lister struct {
	Agents AgentReader
	Chat   conversations.Tools
	Task   worker.Tools
}

// Offered returns the tools agent slug of the team receives in where
// (toolset.ContextChat or ContextTask; "" is chat). Returns EINVALID
// (context), ENOTFOUND (an agent the team does not have).
func (l Lister) Offered(ctx context.Context, teamID, slug, where string) (toolset.Offered, error) {
	if where == "" {
		where = toolset.ContextChat
	}
	if where != toolset.ContextChat && where != toolset.ContextTask {
		return toolset.Offered{}, apperr.Invalid("context", "context must be %s or %s", toolset.ContextChat, toolset.ContextTask)
	}
	if !agents.ValidSlug(slug) {
		return toolset.Offered{}, apperr.NotFound("agent", slug)
	}
	a, err := l.Agents.GetAgent(ctx, teamID, slug)
	if err != nil {
		return toolset.Offered{}, err
	}
	var specs []models.Tool
	switch {
	case where == toolset.ContextChat && l.Chat != nil:
		specs = l.Chat.Specs(a)
	case where == toolset.ContextTask && l.Task != nil:
		specs = l.Task.Specs(a)
	}
	out := toolset.Offered{Agent: a.Slug, Context: where, Tools: []toolset.OfferedTool{}}
	for _, s := range specs {
		out.Tools = append(out.Tools, toolset.OfferedTool{Name: s.Name, Description: s.Description, InputSchema: s.InputSchema()})
	}
	return out, nil
}
