package consultations

import (
	"log/slog"

	"context"
	"github.com/conclave-ai/conclave/shared/models"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// ExpertGate adapts the ExpertGate (in process: expertgate.Service over the
// store) to Gate: the candidates go with the request, so the gate scores
// exactly the active agents other than the requester.
type ExpertGate struct{ Gate expertgate.Gate }

// Score implements Gate.
func (g ExpertGate) Score(ctx context.Context, teamID, query string, candidates []agents.Agent, include ...string) ([]routing.ExpertScore, error) {
	resp, err := g.Gate.Score(ctx, expertgate.Request{TeamID: teamID, Query: query, Agents: candidates, Include: include})
	if err != nil {
		return nil, err
	}
	return resp.Scores, nil
}

// Backend is everything the service reads and writes: the table's store
// implements it.
type Backend interface {
	Store
	Directory
	Memories
	expertgate.Source
}

// New builds the service over b, with the ExpertGate scoring in process.
func New(b Backend, model models.Model, bus Publisher, tiers map[string]string, log *slog.Logger) *Service {
	gate := &expertgate.Service{Source: b, Tiers: routing.TiersOrDefault(tiers)}
	return &Service{Store: b, Dir: b, Gate: ExpertGate{Gate: gate}, Model: model, Memories: b, Bus: bus, Log: log}
}
