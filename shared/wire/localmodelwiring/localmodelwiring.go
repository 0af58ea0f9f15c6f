// Package localmodelwiring builds the local model (shared/models/localmodel)
// over the agent store. It is apart from shared/wire/providers, which builds
// every provider, so that the unit tests of the domains that answer through
// the local model link the local model and the agents' types only, not the
// Bedrock, OpenAI, A2A and Secrets Manager clients providers links.
package localmodelwiring

import (
	"context"

	"github.com/conclave-ai/conclave/shared/models/localmodel"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// AgentReader reads the agent a model request is attributed to: the agent
// store, or a store whose port looks agents up too.
type AgentReader interface {
	// GetAgent returns ENOTFOUND for an unknown agent.
	GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error)
}

// Agents adapts an AgentReader to the local model's port: the local
// model sits in the models wing, below the team wing, so it cannot read
// an agents.Agent itself.
type Agents struct {
	Reader AgentReader
}

var _ localmodel.AgentReader = Agents{}

// GetAgent implements localmodel.AgentReader: the agent's name, script
// and skills, its errors as they are (ENOTFOUND for an unknown agent).
func (l Agents) GetAgent(ctx context.Context, teamID, slug string) (localmodel.Agent, error) {
	a, err := l.Reader.GetAgent(ctx, teamID, slug)
	if err != nil {
		return localmodel.Agent{}, err
	}
	out := localmodel.Agent{Name: a.Name}
	if a.Model != nil {
		out.Script = a.Model.Script
	}
	for _, sk := range a.Skills {
		out.Skills = append(out.Skills, localmodel.Skill{Name: sk.Name, Description: sk.Description, InternalOnly: sk.InternalOnly})
	}
	return out, nil
}

// New returns the local model reading agents (their scripts and voices)
// from r; with a nil r it reads none and answers plainly.
func New(r AgentReader) localmodel.Model {
	if r == nil {
		return localmodel.New(nil)
	}
	return localmodel.New(Agents{Reader: r})
}
