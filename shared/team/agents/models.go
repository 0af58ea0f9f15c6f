package agents

import (
	"context"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
)

// Catalog says which models the stage offers its agents: the agents
// function's settings (its routing tiers' models and its extra models,
// shared/models.Catalog), which are exactly the models the stage's Bedrock
// grants name. An agent given another model would be stored and then
// refused by Bedrock (AccessDenied) on every reply.
type Catalog interface {
	// Offered reports whether the stage offers provider's model id; the
	// empty provider is the stage's default one.
	Offered(provider, modelID string) bool
}

// offered reports whether the stage offers m. A model naming no id (the
// provider's default, a tier's model) and an external A2A agent's (the
// agent itself) always are; without a Catalog every model is.
func (s *Service) offered(m *Model) bool {
	if s.Models == nil || m == nil || m.ID == "" || m.Provider == ProviderA2A {
		return true
	}
	return s.Models.Offered(m.Provider, m.ID)
}

// check validates a and, when its model is new (previous is the stored
// one, nil on create), that the stage offers the model: EINVALID naming
// model.id otherwise. A stored agent whose model the stage no longer
// offers keeps it through updates that leave it as it is (it is listed by
// ListMisconfigured).
func (s *Service) check(a Agent, previous *Model) error {
	if err := validate(a); err != nil {
		return err
	}
	m := a.Model
	if m == nil || (previous != nil && previous.Provider == m.Provider && previous.ID == m.ID) || s.offered(m) {
		return nil
	}
	return apperr.Invalid("model.id", "model %q is not offered in this stage (GET /v1/models lists the models it offers)", m.ID).
		WithDetail("provider", m.Provider)
}

// Misconfigured reports whether the stage no longer offers a's model: it
// was stored before the stage's models changed, and each of its replies
// fails until its model is changed to one offered.
func (s *Service) Misconfigured(a Agent) bool { return !s.offered(a.Model) }

// ListMisconfigured is List narrowed to the agents whose model the stage
// does not offer (Misconfigured). It reads one page of the team's agents
// as List does and keeps those: a page may hold fewer than its limit, or
// none, and still have a next token. Returns EINVALID.
func (s *Service) ListMisconfigured(ctx context.Context, teamID string, f Filter, p paging.Page) ([]Agent, string, error) {
	list, next, err := s.List(ctx, teamID, f, p)
	if err != nil {
		return nil, "", err
	}
	out := []Agent{}
	for _, a := range list {
		if s.Misconfigured(a) {
			out = append(out, a)
		}
	}
	return out, next, nil
}
