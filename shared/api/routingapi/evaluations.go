package routingapi

import (
	"context"
	"net/http"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/routing/evaluations"
)

// EvaluationRoutes registers the routing evaluations (evaluations): a
// create answers 202 with the evaluation running; the routing-evaluator
// function runs it.
func EvaluationRoutes(rt *httpapi.Router, svc *evaluations.Service) {
	rt.Handle("POST /v1/routing/evaluations", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in evaluations.Input
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		e, err := svc.Create(ctx, r.TeamID, in)
		if err != nil {
			return httpapi.Response{}, err
		}
		e.Messages = nil // the client has them; GET shows them
		return httpapi.Response{Status: http.StatusAccepted, Body: e}, nil
	})
	rt.Handle("GET /v1/routing/evaluations", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		p, err := r.Page()
		if err != nil {
			return httpapi.Response{}, err
		}
		list, next, err := svc.List(ctx, r.TeamID, p)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(api.ListResponse[evaluations.Evaluation]{Items: list, NextToken: next}), nil
	})
	rt.Handle("GET /v1/routing/evaluations/{id}", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		e, err := svc.Get(ctx, r.TeamID, r.Param("id"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(e), nil
	})
}
