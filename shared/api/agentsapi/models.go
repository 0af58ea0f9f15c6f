package agentsapi

import (
	"context"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
)

// Offers lists the models the stage offers its agents (models.Catalog).
type Offers interface {
	Offers() []models.Offer
}

// ModelRoutes registers GET /v1/models: the models the stage offers its
// agents, the ones POST and PATCH /v1/agents accept as model.id. It is the
// stage's data, the same for every team (a request still needs a key).
func ModelRoutes(rt *httpapi.Router, catalog Offers) {
	rt.Handle("GET /v1/models", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		return httpapi.OK(api.ListResponse[models.Offer]{Items: catalog.Offers()}), nil
	})
}
