package agentsapi

import (
	"context"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/routing/suggestions"
)

// SuggestionRoutes registers the examples suggested by users' corrections
// of the router (shared/routing/suggestions): listed per agent, accepted
// (the example added to the skill) or dismissed, never added by
// themselves.
func SuggestionRoutes(rt *httpapi.Router, svc *suggestions.Service) {
	rt.Handle("GET /v1/agents/{slug}/example-suggestions", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		p, err := r.Page()
		if err != nil {
			return httpapi.Response{}, err
		}
		list, next, err := svc.List(ctx, r.TeamID, r.Param("slug"), p)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(api.ListResponse[suggestions.Suggestion]{Items: list, NextToken: next}), nil
	})
	rt.Handle("POST /v1/agents/{slug}/example-suggestions/{id}/accept", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in suggestions.AcceptInput
		if err := r.DecodeOptional(&in); err != nil {
			return httpapi.Response{}, err
		}
		out, err := svc.Accept(ctx, r.TeamID, r.Param("slug"), r.Param("id"), in)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(out), nil
	})
	rt.Handle("POST /v1/agents/{slug}/example-suggestions/{id}/dismiss", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		if err := svc.Dismiss(ctx, r.TeamID, r.Param("slug"), r.Param("id")); err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(map[string]any{"id": r.Param("id"), "agent": r.Param("slug"), "dismissed": true}), nil
	})
}
