package teamapi

import (
	"context"

	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/team/identity"
)

// IdentityRoutes registers the team's identity provider: GET and PUT
// /v1/team/identity (docs/api.md, "Signing people in").
func IdentityRoutes(rt *httpapi.Router, svc *identity.Service) {
	rt.Handle("GET /v1/team/identity", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		p, err := svc.Get(ctx, r.TeamID)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(p), nil
	})
	rt.Handle("PUT /v1/team/identity", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in identity.Provider
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		p, err := svc.Put(ctx, r.TeamID, in)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(p), nil
	})
}
