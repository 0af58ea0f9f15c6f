package approvalsapi

import (
	"context"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/work/approvals"
)

// ApprovalRoutes registers the approval routes (served by the tasks
// function: approvals are of tasks' tool calls).
func ApprovalRoutes(rt *httpapi.Router, svc *approvals.Service) {
	h := approvalHandlers{svc}
	rt.Handle("GET /v1/approval-policy", h.getPolicy)
	rt.Handle("PUT /v1/approval-policy", h.putPolicy)
	rt.Handle("GET /v1/approvals", h.list)
	rt.Handle("GET /v1/approvals/{id}", h.get)
	rt.Handle("POST /v1/approvals/{id}", h.decide)
}

type approvalHandlers struct{ svc *approvals.Service }

func (h approvalHandlers) getPolicy(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	return okApproval(h.svc.Policy(ctx, r.TeamID))
}

func (h approvalHandlers) putPolicy(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var in approvals.PolicyInput
	if err := r.Decode(&in); err != nil {
		return httpapi.Response{}, err
	}
	return okApproval(h.svc.PutPolicy(ctx, r.TeamID, api.ByUser(r), in))
}

func (h approvalHandlers) list(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	p, err := r.Page()
	if err != nil {
		return httpapi.Response{}, err
	}
	list, next, err := h.svc.List(ctx, r.TeamID, approvals.Filter{Status: approvals.Status(r.Query("status")), TaskID: r.Query("task_id")}, p)
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(api.ListResponse[approvals.Approval]{Items: list, NextToken: next}), nil
}

func (h approvalHandlers) get(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	return okApproval(h.svc.Get(ctx, r.TeamID, r.Param("id")))
}

func (h approvalHandlers) decide(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var in approvals.DecideInput
	if err := r.Decode(&in); err != nil {
		return httpapi.Response{}, err
	}
	return okApproval(h.svc.Decide(ctx, r.TeamID, r.Param("id"), api.ByUser(r), in))
}

// okApproval answers 200 with v, or the error.
func okApproval[T any](v T, err error) (httpapi.Response, error) {
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(v), nil
}
