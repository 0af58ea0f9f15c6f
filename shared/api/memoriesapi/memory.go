package memoriesapi

import (
	"context"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/team/memory"
)

// MemoryRoutes registers the memories function's routes.
func MemoryRoutes(rt *httpapi.Router, svc *memory.Service) {
	rt.Handle("POST /v1/agents/{slug}/memories", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in memory.CreateInput
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		m, err := svc.Create(ctx, r.TeamID, r.Param("slug"), in)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.Created(m), nil
	})
	rt.Handle("GET /v1/agents/{slug}/memories", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		list, err := svc.Visible(ctx, r.TeamID, r.Param("slug"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(api.ListResponse[memory.Memory]{Items: list}), nil
	})
}
