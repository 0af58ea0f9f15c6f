package tasksapi

import (
	"context"

	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// BoardPolicyRoutes registers the board policy's routes (due dates:
// whether an overdue task escalates).
func BoardPolicyRoutes(rt *httpapi.Router, svc *tasks.Service) {
	h := taskHandlers{svc}
	rt.Handle("GET /v1/board-policy", h.getBoardPolicy)
	rt.Handle("PUT /v1/board-policy", h.putBoardPolicy)
}

func (h taskHandlers) getBoardPolicy(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	p, err := h.svc.BoardPolicy(ctx, r.TeamID)
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(p), nil
}

func (h taskHandlers) putBoardPolicy(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var in tasks.BoardPolicyInput
	if err := r.Decode(&in); err != nil {
		return httpapi.Response{}, err
	}
	p, err := h.svc.SetBoardPolicy(ctx, r.TeamID, in)
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(p), nil
}
