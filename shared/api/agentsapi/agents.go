package agentsapi

import (
	"context"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// AgentRoutes registers the agents function's routes.
func AgentRoutes(rt *httpapi.Router, svc *agents.Service) {
	rt.Handle("POST /v1/agents", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in agents.CreateInput
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		a, err := svc.Create(ctx, r.TeamID, in)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.Created(a), nil
	})
	rt.Handle("GET /v1/agents", listAgents(svc))
	rt.Handle("GET /v1/agents/{slug}", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		a, err := svc.Get(ctx, r.TeamID, r.Param("slug"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(a), nil
	})
	rt.Handle("PATCH /v1/agents/{slug}", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in agents.UpdateInput
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		a, err := svc.Update(ctx, r.TeamID, r.Param("slug"), in)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(a), nil
	})
	for action, status := range map[string]string{"pause": agents.StatusPaused, "activate": agents.StatusActive, "archive": agents.StatusArchived} {
		status := status
		rt.Handle("POST /v1/agents/{slug}/"+action, func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
			a, err := svc.SetStatus(ctx, r.TeamID, r.Param("slug"), status)
			if err != nil {
				return httpapi.Response{}, err
			}
			return httpapi.OK(a), nil
		})
	}
	// An external A2A agent's card, fetched now (the sweeper fetches it on
	// its schedule too: agents.CardRefreshEvery).
	rt.Handle("POST /v1/agents/{slug}/refresh", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		a, err := svc.Refresh(ctx, r.TeamID, r.Param("slug"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(a), nil
	})
	rt.Handle("PUT /v1/team/default-agent", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in struct {
			Slug string `json:"slug"`
		}
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		a, err := svc.SetDefault(ctx, r.TeamID, in.Slug)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(a), nil
	})
}

// listAgents serves GET /v1/agents: a page of the team's agents, or with
// ?misconfigured=true of those whose model the stage no longer offers.
func listAgents(svc *agents.Service) httpapi.HandlerFunc {
	return func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		p, err := r.Page()
		if err != nil {
			return httpapi.Response{}, err
		}
		list := svc.List
		switch r.Query("misconfigured") {
		case "", "false":
		case "true":
			list = svc.ListMisconfigured
		default:
			return httpapi.Response{}, apperr.Invalid("misconfigured", "misconfigured must be true or false")
		}
		items, next, err := list(ctx, r.TeamID, agents.Filter{Status: r.Query("status")}, p)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(api.ListResponse[agents.Agent]{Items: items, NextToken: next}), nil
	}
}

// SkillRoutes registers the team's skill registry (the agents function
// serves it: the skills are read from the agents).
func SkillRoutes(rt *httpapi.Router, svc *agents.Service) {
	rt.Handle("GET /v1/skills", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		p, err := r.Page()
		if err != nil {
			return httpapi.Response{}, err
		}
		f := agents.SkillFilter{Agent: r.Query("agent"), Domain: r.Query("domain"), Kind: r.Query("kind"), Tool: r.Query("tool")}
		list, next, err := svc.Skills(ctx, r.TeamID, f, p)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(api.ListResponse[agents.SkillEntry]{Items: list, NextToken: next}), nil
	})
	rt.Handle("GET /v1/skills/{agent}/{name}", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		e, err := svc.Skill(ctx, r.TeamID, r.Param("agent"), r.Param("name"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(e), nil
	})
}
