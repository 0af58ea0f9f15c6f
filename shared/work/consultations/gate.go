package consultations

import (
	"log/slog"

	"context"

	"github.com/conclave-ai/conclave/shared/models"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// ExpertGate adapts the ExpertGate (the expert-gate function's client, or
// expertgate.Service in process) to Gate: the candidates go with the request, so the gate scores
// exactly the active agents other than the requester.
//
// Fallback, when set, scores when Gate fails (the expert-gate function
// throttled or unreachable): a consultation ranked by words beats none,
// as a chat turn falls back to the AgentRouter. The failure is logged.
type ExpertGate struct {
	Gate     expertgate.Gate
	Fallback expertgate.Gate
	Log      *slog.Logger
}

// Score implements Gate.
func (g ExpertGate) Score(ctx context.Context, teamID, query string, candidates []agents.Agent, include ...string) ([]routing.ExpertScore, error) {
	req := expertgate.Request{TeamID: teamID, Query: query, Agents: candidates, Include: include}
	resp, err := g.Gate.Score(ctx, req)
	if err != nil && g.Fallback != nil {
		log := g.Log
		if log == nil {
			log = slog.Default()
		}
		log.WarnContext(ctx, "the expert gate failed: the specialist is ranked in process, by words", "team_id", teamID, "error", err.Error())
		resp, err = g.Fallback.Score(ctx, req)
	}
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

// New builds the service over b, ranking specialists with gate: the
// expert-gate function's client, so a consultation's specialist is ranked
// as a chat turn's agent is (the same embedder, examples and
// calibration). A nil gate (a stage with no expert-gate function) scores
// in process over b, by words alone; so does a gate that fails.
func New(b Backend, gate expertgate.Gate, model models.Model, bus Publisher, tiers map[string]string, log *slog.Logger) *Service {
	local := &expertgate.Service{Source: b, Tiers: routing.TiersOrDefault(tiers)}
	g := ExpertGate{Gate: local}
	if gate != nil {
		g = ExpertGate{Gate: gate, Fallback: local, Log: log}
	}
	return &Service{Store: b, Dir: b, Gate: g, Model: model, Memories: b, Bus: bus, Log: log}
}
