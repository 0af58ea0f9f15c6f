package teamapi

import (
	"context"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/team/activity"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// TeamRoutes registers the team function's routes: the team, its API keys
// and its activity log.
func TeamRoutes(rt *httpapi.Router, svc *teams.Service, log activity.Store) {
	rt.Handle("GET /v1/team", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		t, err := svc.Store.GetTeam(ctx, r.TeamID)
		if err != nil {
			return httpapi.Response{}, err
		}
		// A team made before A2A has no A2A id: it gets one here, where a
		// client learns its agent's URL (one write, once).
		if t.A2AID, err = svc.EnsureA2AID(ctx, t); err != nil {
			return httpapi.Response{}, err
		}
		base := a2aBase(r) + t.A2AID
		return httpapi.OK(teamView{Team: t, A2A: a2aView{ID: t.A2AID, URL: base, CardURL: base + "/.well-known/agent-card.json"}}), nil
	})
	rt.Handle("GET /v1/keys", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		keys, err := svc.Store.ListAPIKeys(ctx, r.TeamID)
		if err != nil {
			return httpapi.Response{}, err
		}
		if keys == nil {
			keys = []teams.APIKey{}
		}
		return httpapi.OK(api.ListResponse[teams.APIKey]{Items: keys}), nil
	})
	rt.Handle("POST /v1/keys", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in teams.KeySpec
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		k, err := svc.IssueKey(ctx, r.TeamID, in)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.Created(k), nil
	})
	rt.Handle("POST /v1/keys/{id}/rotate", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		k, err := svc.RotateKey(ctx, r.TeamID, r.Param("id"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.Created(k), nil
	})
	rt.Handle("DELETE /v1/keys/{id}", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		k, err := svc.RevokeKey(ctx, r.TeamID, r.Param("id"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(k), nil
	})
	rt.Handle("GET /v1/activity", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		p, err := r.Page()
		if err != nil {
			return httpapi.Response{}, err
		}
		list, next, err := log.List(ctx, r.TeamID, p)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(api.ListResponse[activity.Entry]{Items: list, NextToken: next}), nil
	})
}

// teamView is the team as GET /v1/team shows it: with its A2A agent's
// URLs (docs/a2a.md).
type teamView struct {
	teams.Team
	A2A a2aView `json:"a2a"`
}

type a2aView struct {
	ID      string `json:"id"`
	URL     string `json:"url"`
	CardURL string `json:"card_url"`
}

// a2aBase is the URL prefix of the team's A2A agents on the API's host as
// the client reached it (API Gateway sets X-Forwarded-Proto; the local
// edge too).
func a2aBase(r *httpapi.Request) string {
	proto := r.Event.Headers["x-forwarded-proto"]
	if proto != "http" {
		proto = "https"
	}
	host := r.Event.RequestContext.DomainName
	if host == "" {
		host = r.Event.Headers["host"]
	}
	return proto + "://" + host + "/a2a/"
}
