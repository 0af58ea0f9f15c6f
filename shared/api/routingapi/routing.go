package routingapi

import (
	"context"
	"strconv"
	"time"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
)

func sinceParam(r *httpapi.Request) (time.Time, error) {
	v := r.Query("since")
	if v == "" && !r.HasQuery("since") {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, apperr.Invalid("since", "since must be an RFC 3339 time, e.g. 2026-11-01T00:00:00Z")
	}
	return t, nil
}

// RoutingRoutes registers the routing function's routes: the decision log
// and its analytics, served by shared/routing/cascade, and the team's
// routing calibration (expertgate.Calibrations).
func RoutingRoutes(rt *httpapi.Router, svc *cascade.Service, cal *expertgate.Calibrations) {
	rt.Handle("GET /v1/routing/calibration", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		rep, err := cal.Report(ctx, r.TeamID)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(rep), nil
	})
	rt.Handle("GET /v1/routing/decisions", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		p, err := r.Page()
		if err != nil {
			return httpapi.Response{}, err
		}
		since, err := sinceParam(r)
		if err != nil {
			return httpapi.Response{}, err
		}
		f := cascade.DecisionFilter{ConversationID: r.Query("conversation_id"), Strategy: r.Query("strategy"), Agent: r.Query("agent"), Since: since}
		if v := r.Query("fallback"); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return httpapi.Response{}, apperr.Invalid("fallback", "fallback must be true or false")
			}
			f.Fallback = &b
		}
		list, next, err := svc.Decisions(ctx, r.TeamID, f, p)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(api.ListResponse[cascade.Decision]{Items: list, NextToken: next}), nil
	})
	rt.Handle("GET /v1/routing/decisions/{id}", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		d, err := svc.Decision(ctx, r.TeamID, r.Param("id"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(d), nil
	})
	rt.Handle("GET /v1/routing/analytics/agents", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		since, err := sinceParam(r)
		if err != nil {
			return httpapi.Response{}, err
		}
		minSim := 0.0
		if v := r.Query("min_similarity"); v != "" || r.HasQuery("min_similarity") {
			if minSim, err = strconv.ParseFloat(v, 64); err != nil || minSim <= 0 || minSim > 1 {
				return httpapi.Response{}, apperr.Invalid("min_similarity", "min_similarity must be a number above 0 and at most 1")
			}
		}
		rep, err := svc.SelectedFor(ctx, r.TeamID, r.Query("query"), minSim, since)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(rep), nil
	})
	rt.Handle("GET /v1/routing/analytics/strategies", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		since, err := sinceParam(r)
		if err != nil {
			return httpapi.Response{}, err
		}
		rep, err := svc.ConfidenceByStrategy(ctx, r.TeamID, since)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(rep), nil
	})
}
