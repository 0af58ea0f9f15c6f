package sessionsapi

import (
	"context"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/work/sessions"
)

// SessionRoutes registers the sessions function's routes.
func SessionRoutes(rt *httpapi.Router, svc *sessions.Service) {
	h := sessionHandlers{svc}
	rt.Handle("POST /v1/sessions", h.create)
	rt.Handle("GET /v1/sessions", h.list)
	rt.Handle("GET /v1/sessions/{id}", h.get)
	rt.Handle("GET /v1/sessions/{id}/trace", h.trace)
	rt.Handle("POST /v1/sessions/{id}/cancel", h.cancel)
	rt.Handle("POST /v1/sessions/{id}/approve", h.approve)
	rt.Handle("POST /v1/sessions/{id}/resume", h.resume)
}

// sessionHandlers are the sessions function's route handlers.
type sessionHandlers struct{ svc *sessions.Service }

func (h sessionHandlers) create(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var in sessions.CreateInput
	if err := r.Decode(&in); err != nil {
		return httpapi.Response{}, err
	}
	s, err := h.svc.Create(idempotency.Scope(ctx, sessions.RefKind), r.TeamID, api.ByUser(r), in)
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.Created(s), nil
}

func (h sessionHandlers) list(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	p, err := r.Page()
	if err != nil {
		return httpapi.Response{}, err
	}
	f := sessions.Filter{Status: sessions.Status(r.Query("status")), Pattern: sessions.Pattern(r.Query("pattern")), Agent: r.Query("agent"), UserID: api.OwnUser(r)}
	list, next, err := h.svc.List(ctx, r.TeamID, f, p)
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(api.ListResponse[sessions.Session]{Items: list, NextToken: next}), nil
}

func (h sessionHandlers) get(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	s, err := h.svc.Get(ctx, r.TeamID, r.Param("id"))
	if err == nil {
		err = api.Reach(r, s.UserID, "session", r.Param("id"))
	}
	return ok(s, err)
}

func (h sessionHandlers) trace(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	t, err := h.svc.Trace(ctx, r.TeamID, r.Param("id"))
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(t), nil
}

func (h sessionHandlers) cancel(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	return ok(h.svc.Cancel(ctx, r.TeamID, r.Param("id"), api.ByUser(r)))
}

func (h sessionHandlers) approve(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var in sessions.ApproveInput
	if err := r.Decode(&in); err != nil {
		return httpapi.Response{}, err
	}
	return ok(h.svc.Approve(ctx, r.TeamID, r.Param("id"), api.ByUser(r), in))
}

func (h sessionHandlers) resume(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	return ok(h.svc.Resume(ctx, r.TeamID, r.Param("id")))
}

func ok(s sessions.Session, err error) (httpapi.Response, error) {
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(s), nil
}
