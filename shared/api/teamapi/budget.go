package teamapi

import (
	"context"
	"github.com/conclave-ai/conclave/shared/platform/apperr"

	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/team/budget"
)

// BudgetRoutes registers the team's budget (its CostGuard) and the
// attribution of its model spend.
func BudgetRoutes(rt *httpapi.Router, svc *budget.Service) {
	rt.Handle("GET /v1/budget", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		st, err := svc.Get(ctx, r.TeamID)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(st), nil
	})
	rt.Handle("PUT /v1/budget", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in budget.PutInput
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		st, err := svc.Put(ctx, r.TeamID, in)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(st), nil
	})
	rt.Handle("GET /v1/usage", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		// A date given empty (`?to=`) is refused, not read as the default:
		// the document asks for a date when the parameter is there.
		for _, name := range []string{"from", "to"} {
			if r.HasQuery(name) && r.Query(name) == "" {
				return httpapi.Response{}, apperr.Invalid(name, "%s must be a date, YYYY-MM-DD (leave it out for the default)", name)
			}
		}
		rep, err := svc.Usage(ctx, r.TeamID, budget.UsageQuery{From: r.Query("from"), To: r.Query("to"), GroupBy: r.Query("group_by")})
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(rep), nil
	})
}
