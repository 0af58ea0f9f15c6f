package cascade

import (
	"context"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clock"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
)

// Service reads the routing decision log and answers the analytics over
// it: the routing function's service.
type Service struct {
	Store Store
	Now   clock.Func
}

// Decision returns one decision of the log. Returns ENOTFOUND.
func (s *Service) Decision(ctx context.Context, teamID, id string) (Decision, error) {
	return s.Store.GetDecision(ctx, teamID, id)
}

// Decisions lists the log newest first. Returns EINVALID.
func (s *Service) Decisions(ctx context.Context, teamID string, f DecisionFilter, p paging.Page) ([]Decision, string, error) {
	p, err := p.Normalize()
	if err != nil {
		return nil, "", err
	}
	if f.Strategy != "" {
		switch routing.Strategy(f.Strategy) {
		case routing.Top1, routing.TopK, routing.Ensemble, routing.Cascade, routing.Direct, routing.Mentioned, routing.Router, routing.HandedOff, routing.Greeting:
		default:
			return nil, "", apperr.Invalid("strategy", "strategy must be top_1, top_k, ensemble, cascade, direct, mention, router, handoff or greeting")
		}
	}
	return s.Store.ListDecisions(ctx, teamID, f, p)
}
