package api

import (
	"context"
	"strconv"

	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/memory"
	"github.com/conclave-ai/conclave/shared/messaging"
)

// MessageRoutes registers the messages function's routes: agents sending
// messages and reading their inboxes.
func MessageRoutes(rt *httpapi.Router, svc *messaging.Service) {
	rt.Handle("POST /v1/agents/{slug}/messages", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in messaging.SendInput
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		m, err := svc.Send(ctx, r.TeamID, r.Param("slug"), in)
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
		return httpapi.OK(ListResponse[messaging.Message]{Items: list, NextToken: next}), nil
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

// MemoryRoutes registers the memories function's routes.
func MemoryRoutes(rt *httpapi.Router, svc *memory.Service) {
	rt.Handle("POST /v1/agents/{slug}/memories", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in memory.CreateInput
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		m, err := svc.Create(ctx, r.TeamID, r.Param("slug"), in)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.Created(m), nil
	})
	rt.Handle("GET /v1/agents/{slug}/memories", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		list, err := svc.Visible(ctx, r.TeamID, r.Param("slug"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(ListResponse[memory.Memory]{Items: list}), nil
	})
}

// handoffRoutes are the conversations function's handoff and multi-agent
// routes.
func handoffRoutes(rt *httpapi.Router, svc *conversations.Service) {
	rt.Handle("POST /v1/conversations/{id}/handoff", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in conversations.HandoffInput
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		h, err := svc.Handoff(ctx, r.TeamID, r.Param("id"), in)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.Created(h), nil
	})
	rt.Handle("POST /v1/conversations/{id}/return", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		h, err := svc.Return(ctx, r.TeamID, r.Param("id"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.Created(h), nil
	})
	rt.Handle("GET /v1/conversations/{id}/handoffs", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		list, err := svc.Handoffs(ctx, r.TeamID, r.Param("id"))
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(ListResponse[conversations.Handoff]{Items: list}), nil
	})
	rt.Handle("POST /v1/conversations/{id}/agents", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in conversations.AgentsInput
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		c, err := svc.SetAgents(ctx, r.TeamID, r.Param("id"), in)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(c), nil
	})
	rt.Handle("GET /v1/conversations/{id}/context", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		agent := r.Query("agent")
		if agent == "" {
			return httpapi.Response{}, apperr.Invalid("agent", "agent is required")
		}
		c, err := svc.ContextFor(ctx, r.TeamID, r.Param("id"), agent)
		if err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.OK(c), nil
	})
}
