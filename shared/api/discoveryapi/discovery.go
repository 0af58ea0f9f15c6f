package discoveryapi

import (
	"context"
	"strconv"
	"strings"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/discovery"
)

func csv(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// DiscoveryRoutes registers the discovery function's routes.
func DiscoveryRoutes(rt *httpapi.Router, svc *discovery.Service) {
	rt.Handle("GET /v1/agents/recommend", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		threshold := routing.DefaultThreshold
		if v, ok := r.Event.QueryStringParameters["confidence_threshold"]; ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return httpapi.Response{}, apperr.Invalid("confidence_threshold", "confidence_threshold must be a number from 0 to 1")
			}
			threshold = f
		}
		out, err := svc.Recommend(ctx, r.TeamID, r.Query("query"), threshold)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(out), nil
	})
	rt.Handle("GET /v1/agents/experts", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		list, err := svc.FindExperts(ctx, r.TeamID, csv(r.Query("skills")), csv(r.Query("exclude")))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(api.ListResponse[discovery.Expert]{Items: list}), nil
	})
	rt.Handle("GET /v1/agents/{slug}/availability", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		a, err := svc.Availability(ctx, r.TeamID, r.Param("slug"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(a), nil
	})
}
