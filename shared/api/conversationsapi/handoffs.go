package conversationsapi

import (
	"context"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
)

// handoffRoutes are the conversations function's handoff and multi-agent
// routes.
func handoffRoutes(rt *httpapi.Router, svc *conversations.Service) {
	rt.Handle("POST /v1/conversations/{id}/handoff", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in conversations.HandoffInput
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		h, err := svc.Handoff(ctx, r.TeamID, r.Param("id"), in)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.Created(h), nil
	})
	rt.Handle("POST /v1/conversations/{id}/return", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		h, err := svc.Return(ctx, r.TeamID, r.Param("id"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.Created(h), nil
	})
	rt.Handle("GET /v1/conversations/{id}/handoffs", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		list, err := svc.Handoffs(ctx, r.TeamID, r.Param("id"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(api.ListResponse[conversations.Handoff]{Items: list}), nil
	})
	rt.Handle("POST /v1/conversations/{id}/agents", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in conversations.AgentsInput
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		c, err := svc.SetAgents(ctx, r.TeamID, r.Param("id"), in)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(c), nil
	})
	rt.Handle("GET /v1/conversations/{id}/context", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		agent := r.Query("agent")
		if agent == "" {
			return httpapi.Response{}, apperr.Invalid("agent", "agent is required")
		}
		c, err := svc.ContextFor(ctx, r.TeamID, r.Param("id"), agent)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(c), nil
	})
}
