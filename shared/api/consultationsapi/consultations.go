package consultationsapi

import (
	"context"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/work/consultations"
)

// ConsultationRoutes registers the consultations function's routes.
func ConsultationRoutes(rt *httpapi.Router, svc *consultations.Service) {
	h := consultationHandlers{svc}
	rt.Handle("POST /v1/consultations", h.request)
	rt.Handle("GET /v1/consultations", h.list)
	rt.Handle("GET /v1/consultations/metrics", h.metrics)
	rt.Handle("GET /v1/consultations/{id}", h.get)
	rt.Handle("POST /v1/consultations/{id}/exchanges", h.exchange)
	rt.Handle("POST /v1/consultations/{id}/outcome", h.outcome)
	rt.Handle("GET /v1/escalations", h.escalations)
	rt.Handle("POST /v1/escalations/{id}/resolve", h.resolve)
}

type consultationHandlers struct{ svc *consultations.Service }

// request runs the consultation: the specialist answers within the
// request (see shared/work/consultations), so the answer (or the escalation)
// is in the 201.
func (h consultationHandlers) request(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var in consultations.RequestInput
	if err := r.Decode(&in); err != nil {
		return httpapi.Response{}, err
	}
	c, err := h.svc.Request(idempotency.Scope(ctx, consultations.RefKind), r.TeamID, in)
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.Created(c), nil
}

func (h consultationHandlers) list(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	p, err := r.Page()
	if err != nil {
		return httpapi.Response{}, err
	}
	f := consultations.Filter{Status: consultations.Status(r.Query("status")), Agent: r.Query("agent")}
	list, next, err := h.svc.List(ctx, r.TeamID, f, p)
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(api.ListResponse[consultations.Consultation]{Items: list, NextToken: next}), nil
}

func (h consultationHandlers) metrics(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	m, err := h.svc.Metrics(ctx, r.TeamID)
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(m), nil
}

// get long-polls with ?wait=N (seconds, at most MaxWait) while the
// consultation is pending or in_progress (a request is still asking the
// specialist: the question, or a follow-up of a reopened one).
func (h consultationHandlers) get(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	wait, err := r.Wait(api.MaxWait)
	if err != nil {
		return httpapi.Response{}, err
	}
	var c consultations.Consultation
	if wait > 0 {
		c, err = h.svc.Wait(ctx, r.TeamID, r.Param("id"), wait)
	} else {
		c, err = h.svc.Get(ctx, r.TeamID, r.Param("id"))
	}
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(c), nil
}

func (h consultationHandlers) exchange(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var in consultations.ExchangeInput
	if err := r.Decode(&in); err != nil {
		return httpapi.Response{}, err
	}
	c, err := h.svc.Exchange(ctx, r.TeamID, r.Param("id"), in)
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(c), nil
}

func (h consultationHandlers) outcome(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var in consultations.OutcomeInput
	if err := r.Decode(&in); err != nil {
		return httpapi.Response{}, err
	}
	c, err := h.svc.RecordOutcome(ctx, r.TeamID, r.Param("id"), in)
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(c), nil
}

func (h consultationHandlers) escalations(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	p, err := r.Page()
	if err != nil {
		return httpapi.Response{}, err
	}
	list, next, err := h.svc.Escalations(ctx, r.TeamID, consultations.EscalationStatus(r.Query("status")), p)
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(api.ListResponse[consultations.Escalation]{Items: list, NextToken: next}), nil
}

func (h consultationHandlers) resolve(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var in consultations.ResolveInput
	if err := r.Decode(&in); err != nil {
		return httpapi.Response{}, err
	}
	e, err := h.svc.Resolve(ctx, r.TeamID, r.Param("id"), in)
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.OK(e), nil
}
