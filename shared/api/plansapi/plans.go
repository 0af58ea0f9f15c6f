// Package plansapi holds the HTTP handlers of compound plans, registered by
// the plans function: list, read and cancel (a plan starts from a chat
// turn, never from this API). A member lists and reads the plans their
// own turns started (user_id); another person's is not found.
package plansapi

import (
	"context"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/work/plans"
)

// PlanRoutes registers the plans function's routes.
func PlanRoutes(rt *httpapi.Router, svc *plans.Service) {
	rt.Handle("GET /v1/plans", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		p, err := r.Page()
		if err != nil {
			return httpapi.Response{}, err
		}
		list, next, err := svc.List(ctx, r.TeamID, api.OwnUser(r), p)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(api.ListResponse[plans.Plan]{Items: list, NextToken: next}), nil
	})
	rt.Handle("GET /v1/plans/{id}", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		p, err := svc.Get(ctx, r.TeamID, r.Param("id"))
		if err == nil {
			err = api.Reach(r, p.UserID, "plan", r.Param("id"))
		}
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(p), nil
	})
	rt.Handle("POST /v1/plans/{id}/cancel", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		p, err := svc.Cancel(ctx, r.TeamID, r.Param("id"), api.ByUser(r))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(p), nil
	})
}
