package reportsapi

import (
	"context"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// ReportRoutes registers the reports function's routes.
func ReportRoutes(rt *httpapi.Router, svc *reports.Service) {
	h := reportHandlers{svc}
	rt.Handle("GET /v1/report-templates", h.templates)
	rt.Handle("POST /v1/reports", h.request)
	rt.Handle("GET /v1/reports", h.list)
	rt.Handle("GET /v1/reports/{id}", h.get)
}

type reportHandlers struct{ svc *reports.Service }

func (h reportHandlers) templates(context.Context, *httpapi.Request) (httpapi.Response, error) {
	return httpapi.OK(api.ListResponse[reports.Template]{Items: reports.List()}), nil
}

// request creates the report and its task; a user (the API key) makes the
// request, on behalf of the agent in "from" when it is set.
func (h reportHandlers) request(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var in reports.RequestInput
	if err := r.Decode(&in); err != nil {
		return httpapi.Response{}, err
	}
	rep, err := h.svc.Request(idempotency.Scope(ctx, reports.RefKind), r.TeamID, tasks.Creator{Type: "user", ID: api.Actor(r)}, in)
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.Created(rep), nil
}

func (h reportHandlers) list(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	p, err := r.Page()
	if err != nil {
		return httpapi.Response{}, err
	}
	f := reports.Filter{Type: r.Query("type"), To: r.Query("to"), From: r.Query("from"), Status: reports.Status(r.Query("status")), UserID: api.OwnUser(r)}
	list, next, err := h.svc.List(ctx, r.TeamID, f, p)
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(api.ListResponse[reports.Report]{Items: list, NextToken: next}), nil
}

// get long-polls with ?wait=N (seconds, at most MaxWait) until the report
// has ended, as GET /v1/tasks/{id} does for tasks.
func (h reportHandlers) get(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	wait, err := r.Wait(api.MaxWait)
	if err != nil {
		return httpapi.Response{}, err
	}
	var rep reports.Report
	if r.Caller.Member() || wait == 0 {
		// A member's report is read (and checked: api.Reach) before any wait.
		rep, err = h.svc.Get(ctx, r.TeamID, r.Param("id"))
		if err == nil {
			err = api.Reach(r, rep.UserID, "report", r.Param("id"))
		}
	}
	if err == nil && wait > 0 {
		rep, err = h.svc.Wait(ctx, r.TeamID, r.Param("id"), wait)
	}
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(rep), nil
}
