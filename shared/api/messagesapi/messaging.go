package messagesapi

import (
	"context"
	"strconv"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/team/messaging"
)

// MessageRoutes registers the messages function's routes: agents sending
// messages and reading their inboxes.
func MessageRoutes(rt *httpapi.Router, svc *messaging.Service) {
	rt.Handle("POST /v1/agents/{slug}/messages", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in messaging.SendInput
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		m, err := svc.Send(idempotency.Scope(ctx, messaging.RefKind), r.TeamID, r.Param("slug"), in)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.Created(m), nil
	})
	rt.Handle("GET /v1/agents/{slug}/inbox", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		p, err := r.Page()
		if err != nil {
			return httpapi.Response{}, err
		}
		q := messaging.InboxQuery{Page: p}
		for name, dst := range map[string]*bool{"all": &q.All, "peek": &q.Peek} {
			if v := r.Query(name); v != "" {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return httpapi.Response{}, apperr.Invalid(name, "%s must be true or false", name)
				}
				*dst = b
			}
		}
		list, next, err := svc.Inbox(ctx, r.TeamID, r.Param("slug"), q)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(api.ListResponse[messaging.Message]{Items: list, NextToken: next}), nil
	})
	rt.Handle("POST /v1/agents/{slug}/inbox/read", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in struct {
			MessageIDs []string `json:"message_ids"`
		}
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		n, err := svc.MarkRead(ctx, r.TeamID, r.Param("slug"), in.MessageIDs)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(map[string]int{"marked_read": n}), nil
	})
}
